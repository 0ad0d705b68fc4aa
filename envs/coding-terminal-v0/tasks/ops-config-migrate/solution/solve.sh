#!/bin/bash
set -euo pipefail
# the oracle's full implementation is embedded below
cat > /app/migrate/migrate_config.py <<'PYEOF'
"""Convert a legacy v1 .conf file to the v2 JSON config format (see FORMAT.md).

usage: python3 migrate_config.py OLD.conf NEW.json
"""
import json
import os
import re
import sys

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_HEADER = re.compile(r"^\[([^\]]*)\](?:\s+[#;].*)?$")
_INT = re.compile(r"^(0|[+-]?[1-9][0-9]*)$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[+-]?[0-9]+\.[0-9]+$")
_DURATION = re.compile(r"^([0-9]+)(ms|s|m|h|d)$")
_SIZE = re.compile(r"^([0-9]+)(KB|MB|GB)$")
_DUR_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_SIZE_B = {"KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}
_ESC = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}


class MigrationError(Exception):
    def __init__(self, lineno, message):
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno


def _logical_lines(text):
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        start, cur = i + 1, lines[i]
        while cur.endswith("\\"):
            cur = cur[:-1].rstrip()
            i += 1
            if i >= len(lines):
                break
            cur = cur + " " + lines[i].lstrip()
        yield start, cur
        i += 1


def _split_value(s, lineno):
    """Split raw value text into items [(quote_char or '', text)] and a list flag; drops inline comments."""
    items, is_list, i, n = [], False, 0, len(s)

    def comment_at(j):
        return s[j] in "#;" and (j == 0 or s[j - 1].isspace())

    while True:
        while i < n and s[i].isspace():
            i += 1
        if i < n and s[i] in "\"'":
            q, j, buf = s[i], i + 1, []
            while True:
                if j >= n:
                    raise MigrationError(lineno, "unterminated quoted string")
                c = s[j]
                if q == '"' and c == "\\":
                    if j + 1 >= n or s[j + 1] not in _ESC:
                        raise MigrationError(lineno, "invalid escape in quoted string")
                    buf.append(_ESC[s[j + 1]])
                    j += 2
                    continue
                if c == q:
                    break
                buf.append(c)
                j += 1
            i = j + 1
            while i < n and s[i].isspace():
                i += 1
            if i < n and s[i] != "," and not comment_at(i):
                raise MigrationError(lineno, "unexpected text after quoted string")
            items.append((q, "".join(buf)))
        else:
            j = i
            while j < n and s[j] != "," and not comment_at(j):
                j += 1
            items.append(("", s[i:j].strip()))
            i = j
        if i < n and s[i] == ",":
            is_list = True
            i += 1
            continue
        break
    return items, is_list


def _scalar(item):
    q, text = item
    if q:
        return text, False
    low = text.lower()
    if low in ("yes", "on", "true"):
        return True, False
    if low in ("no", "off", "false"):
        return False, False
    if _INT.match(text):
        return int(text), False
    if _HEX.match(text):
        return int(text, 16), False
    if _FLOAT.match(text):
        return float(text), False
    m = _DURATION.match(text)
    if m:
        return int(m.group(1)) * _DUR_MS[m.group(2)], True
    m = _SIZE.match(text)
    if m:
        return int(m.group(1)) * _SIZE_B[m.group(2)], False
    return text, False


def _convert(raw, lineno):
    items, is_list = _split_value(raw, lineno)
    if is_list:
        return [_scalar(it)[0] for it in items if it[0] or it[1]], False
    item = items[0]
    if not item[0] and not item[1]:
        return None, False
    return _scalar(item)


def _norm(name):
    return name.lower().replace("-", "_")


def migrate(text):
    """Parse v1 text and return the v2 config as a dict."""
    out = {}
    appended = {}  # id(section) -> set of keys built with key[]

    def get_section(path, lineno):
        node = out
        for part in path:
            if part not in node:
                node[part] = {}
            elif not isinstance(node[part], dict):
                raise MigrationError(lineno, f"section {part!r} clashes with a key")
            node = node[part]
        return node

    def assign(section, key, value, append, lineno):
        arr = appended.setdefault(id(section), set())
        if isinstance(section.get(key), dict):
            raise MigrationError(lineno, f"key {key!r} clashes with a section")
        if append:
            if key in section and key not in arr:
                raise MigrationError(lineno, f"{key}[] used after plain {key}")
            arr.add(key)
            section.setdefault(key, []).append(value)
        else:
            if key in arr:
                raise MigrationError(lineno, f"plain {key} used after {key}[]")
            section[key] = value

    path = []
    section = out
    for lineno, line in _logical_lines(text):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue
        if stripped.startswith("["):
            m = _HEADER.match(stripped)
            if not m:
                raise MigrationError(lineno, "malformed section header")
            parts = [p.strip() for p in m.group(1).strip().split(".")]
            if not all(_NAME.match(p) for p in parts):
                raise MigrationError(lineno, "invalid section name")
            parts = [_norm(p) for p in parts]
            if parts[0] == "db":
                parts[0] = "database"
            path = parts
            section = get_section(path, lineno)
            continue
        m = re.search(r"[=:]", stripped)
        if not m:
            raise MigrationError(lineno, "expected key = value")
        key, raw = stripped[:m.start()].strip(), stripped[m.end():]
        append = key.endswith("[]")
        if append:
            key = key[:-2].rstrip()
        if not _NAME.match(key):
            raise MigrationError(lineno, f"invalid key {key!r}")
        key = _norm(key)
        value, is_duration = _convert(raw, lineno)
        target = section
        if not path and key == "loglevel":
            target, key = get_section(["logging"], lineno), "level"
        if is_duration and not append and not key.endswith("_ms"):
            key += "_ms"
        assign(target, key, value, append, lineno)
    out["version"] = 2
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        text = f.read()
    try:
        cfg = migrate(text)
    except MigrationError as exc:
        print(f"{argv[0]}: {exc}", file=sys.stderr)
        return 1
    tmp = argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
PYEOF
python3 /app/migrate/migrate_config.py /app/configs/billing.conf /app/configs/billing.json
