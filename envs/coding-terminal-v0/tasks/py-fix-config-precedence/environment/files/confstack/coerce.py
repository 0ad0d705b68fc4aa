class ConfigTypeError(ValueError):
    pass


_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def coerce(raw, default):
    """Convert the string `raw` to the type of `default`.

    bool: 1/true/yes/on and 0/false/no/off (case-insensitive); int; float; list: comma-separated,
    items stripped, empty items dropped; str: unchanged. Anything unparsable raises ConfigTypeError.
    """
    try:
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, bool):
            low = raw.strip().lower()
            if low in _TRUE:
                return True
            if low in _FALSE:
                return False
            raise ValueError(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, list):
            return [item.strip() for item in raw.split(",") if item.strip()]
    except ValueError:
        raise ConfigTypeError(f"cannot convert {raw!r} to {type(default).__name__}") from None
    return raw
