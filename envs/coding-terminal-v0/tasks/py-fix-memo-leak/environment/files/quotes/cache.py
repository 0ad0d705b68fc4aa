"""Per-instance memoization for expensive methods.

`@memoize_method` caches a method's result per instance and per argument list (positional
and keyword arguments). `clear_cache(obj)` forgets everything cached for `obj` (optionally only
for one method name); `cache_info(obj, name)` returns how many results are cached for that
instance and method. Caching must never keep an instance alive.
"""
import functools

_REGISTRY = {}


def memoize_method(fn):
    cache = {}
    _REGISTRY[fn.__name__] = cache

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        key = args
        if key in cache:
            return cache[key]
        value = fn(self, *args, **kwargs)
        cache[key] = value
        return value

    return wrapper


def clear_cache(obj, name=None):
    for method_name, cache in _REGISTRY.items():
        if name is None or name == method_name:
            cache.clear()


def cache_info(obj, name):
    return len(_REGISTRY.get(name, {}))
