#!/bin/bash
set -e
cat > /app/quotes/cache.py <<'PY'
"""Per-instance memoization for expensive methods.

`@memoize_method` caches a method's result per instance and per argument list (positional
and keyword arguments). `clear_cache(obj)` forgets everything cached for `obj` (optionally only
for one method name); `cache_info(obj, name)` returns how many results are cached for that
instance and method. Caching must never keep an instance alive.
"""
import functools

_ATTR = "_memoize_method_caches"


def _caches(obj):
    try:
        return obj.__dict__.setdefault(_ATTR, {})
    except AttributeError:
        raise TypeError("memoize_method needs instances with a __dict__")


def memoize_method(fn):
    name = fn.__name__
    kwmark = object()

    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        cache = _caches(self).setdefault(name, {})
        key = args
        if kwargs:
            key = args + (kwmark,) + tuple(sorted(kwargs.items()))
        try:
            return cache[key]
        except KeyError:
            pass
        value = fn(self, *args, **kwargs)
        cache[key] = value
        return value

    return wrapper


def clear_cache(obj, name=None):
    caches = obj.__dict__.get(_ATTR)
    if not caches:
        return
    if name is None:
        caches.clear()
    else:
        caches.pop(name, None)


def cache_info(obj, name):
    caches = obj.__dict__.get(_ATTR) or {}
    return len(caches.get(name, {}))
PY
