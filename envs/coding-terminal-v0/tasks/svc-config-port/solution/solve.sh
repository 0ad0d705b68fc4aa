#!/bin/bash
set -euo pipefail
cd /app/notes_service
python3 - <<'PY'
src = open("server.py").read()
start = src.index("def parse_listen(value):")
end = src.index("def make_handler(store):")
new = '''class ConfigError(Exception):
    pass


def _port(text):
    text = str(text).strip()
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"invalid port: {text!r}")
    return int(text)


def parse_listen(value):
    """'host:port' -> (host, port)."""
    value = value.strip()
    if value.startswith("["):
        host, sep, rest = value[1:].partition("]")
        if not sep or not rest.startswith(":"):
            raise ValueError(f"invalid listen address: {value!r}")
        return host, _port(rest[1:])
    if ":" not in value:
        return "127.0.0.1", _port(value)
    host, port = value.rsplit(":", 1)
    return (host.strip() or "0.0.0.0"), _port(port)


def load_config(path):
    cp = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
    if not cp.read(path):
        raise ConfigError(f"config file not found or unreadable: {path}")
    try:
        host, port = parse_listen(cp.get("server", "listen", fallback="127.0.0.1:8080"))
        port_override = os.environ.get("NOTES_PORT", "")
        if port_override:
            port = _port(port_override)
        max_notes = cp.getint("limits", "max_notes", fallback=100)
    except ValueError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return {"host": host, "port": port, "max_notes": max_notes}


'''
src = src[:start] + new + src[end:]
src = src.replace('''    cfg = load_config(args.config)
''', '''    try:
        cfg = load_config(args.config)
    except ConfigError as exc:
        print(f"notes_service: {exc}", file=sys.stderr)
        return 2
''')
open("server.py", "w").write(src)
PY
