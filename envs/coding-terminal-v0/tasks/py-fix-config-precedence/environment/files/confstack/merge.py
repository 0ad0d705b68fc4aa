def deep_merge(base, override):
    """Return a new dict: `override` merged into `base`.

    Nested dicts are merged recursively at any depth; any other value in `override` replaces
    the one in `base`. Neither argument is modified, and the result shares no dicts with them.
    """
    result = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key].update(value)
        else:
            result[key] = value
    return result
