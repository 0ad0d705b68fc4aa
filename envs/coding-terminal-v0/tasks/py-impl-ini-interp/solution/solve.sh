#!/bin/bash
set -e
cat > /app/confparse.py <<'PY'
"""INI-style configuration parser with ${...} interpolation."""
import re


class ParseError(ValueError):
    def __init__(self, lineno, message):
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno


class InterpolationError(ValueError):
    pass


_NAME = re.compile(r"[A-Za-z0-9_.-]+\Z")
_MISSING = object()
_TRUE = {"1", "yes", "true", "on"}
_FALSE = {"0", "no", "false", "off"}


class Config:
    def __init__(self, data):
        self._data = data  # section -> {key: raw value}, insertion ordered

    def sections(self):
        return [s for s in self._data if s != "DEFAULT"]

    def keys(self, section):
        if section not in self._data:
            raise KeyError(section)
        own = list(self._data[section])
        if section != "DEFAULT":
            own += [k for k in self._data.get("DEFAULT", {}) if k not in self._data[section]]
        return own

    def _raw(self, section, key):
        sec = self._data.get(section)
        if sec is None:
            return _MISSING
        if key in sec:
            return sec[key]
        return self._data.get("DEFAULT", {}).get(key, _MISSING)

    def raw(self, section, key, fallback=_MISSING):
        value = self._raw(section, key)
        if value is _MISSING:
            if fallback is _MISSING:
                raise KeyError((section, key))
            return fallback
        return value

    def get(self, section, key, fallback=_MISSING):
        if self._raw(section, key) is _MISSING:
            if fallback is _MISSING:
                raise KeyError((section, key))
            return fallback
        return self._resolve(section, key)

    def _resolve(self, section, key):
        # iterative evaluation with an explicit stack so deep chains cannot hit RecursionError
        cache = {}
        active = set()
        stack = [(section, key)]
        while stack:
            frame = stack[-1]
            if frame in cache:
                stack.pop()
                continue
            active.add(frame)
            sec, k = frame
            raw = self._raw(sec, k)
            pieces, needed = self._expand(raw, sec, cache)
            if needed is not None:
                if needed in active:
                    raise InterpolationError(f"interpolation cycle at {needed[0]}:{needed[1]}")
                if self._raw(*needed) is _MISSING:
                    raise InterpolationError(f"missing reference {needed[0]}:{needed[1]}")
                stack.append(needed)
                continue
            cache[frame] = pieces
            active.discard(frame)
            stack.pop()
        return cache[(section, key)]

    @staticmethod
    def _expand(raw, sec, cache):
        """Return (text, None) when all references are cached, else (None, first missing ref)."""
        out = []
        i, n = 0, len(raw)
        while i < n:
            c = raw[i]
            if c != "$" or i + 1 >= n:
                out.append(c)
                i += 1
                continue
            nxt = raw[i + 1]
            if nxt == "$":
                out.append("$")
                i += 2
                continue
            if nxt != "{":
                out.append("$")
                i += 1
                continue
            end = raw.find("}", i + 2)
            if end < 0:
                raise InterpolationError("unterminated ${")
            ref = raw[i + 2:end]
            parts = ref.split(":")
            if len(parts) == 1:
                target = (sec, parts[0])
            elif len(parts) == 2:
                target = (parts[0], parts[1])
            else:
                raise InterpolationError(f"bad reference {ref!r}")
            if not all(_NAME.match(p) for p in parts):
                raise InterpolationError(f"bad reference {ref!r}")
            if target not in cache:
                return None, target
            out.append(cache[target])
            i = end + 1
        return "".join(out), None

    def getint(self, section, key, fallback=_MISSING):
        v = self.get(section, key, fallback)
        return v if v is fallback else int(v)

    def getfloat(self, section, key, fallback=_MISSING):
        v = self.get(section, key, fallback)
        return v if v is fallback else float(v)

    def getbool(self, section, key, fallback=_MISSING):
        v = self.get(section, key, fallback)
        if v is fallback:
            return v
        low = v.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ValueError(f"not a boolean: {v!r}")

    def getlist(self, section, key, fallback=_MISSING):
        v = self.get(section, key, fallback)
        if v is fallback:
            return v
        return [item.strip() for item in re.split(r"[,\n]", v) if item.strip()]

    def to_dict(self):
        return {s: {k: self.get(s, k) for k in self.keys(s)} for s in self.sections()}


def parse(text):
    data = {}
    section = None
    last_key = None
    for lineno, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if line[0] in " \t":
            if section is None or last_key is None:
                raise ParseError(lineno, "continuation line without a key")
            data[section][last_key] += "\n" + stripped
            continue
        if stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            if not stripped.endswith("]"):
                raise ParseError(lineno, "bad section header")
            name = stripped[1:-1].strip()
            if not _NAME.match(name):
                raise ParseError(lineno, f"bad section name {name!r}")
            if name in data:
                raise ParseError(lineno, f"duplicate section {name!r}")
            data[name] = {}
            section = name
            last_key = None
            continue
        if "=" not in stripped:
            raise ParseError(lineno, "expected key = value")
        if section is None:
            raise ParseError(lineno, "key outside of a section")
        key, _, value = stripped.partition("=")
        key = key.strip()
        if not _NAME.match(key):
            raise ParseError(lineno, f"bad key {key!r}")
        data[section][key] = value.strip()
        last_key = key
    return Config(data)


def load(path):
    with open(path, encoding="utf-8") as fh:
        return parse(fh.read())
PY
