"""Convert a legacy v1 .conf file to the v2 JSON config format (see FORMAT.md).

usage: python3 migrate_config.py OLD.conf NEW.json
"""
import json
import sys


class MigrationError(Exception):
    def __init__(self, lineno, message):
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno


def _value(raw):
    raw = raw.strip()
    if raw.lower() in ("yes", "true", "on"):
        return True
    if raw.lower() in ("no", "false", "off"):
        return False
    if raw.isdigit():
        return int(raw)
    return raw.strip('"')


def migrate(text):
    """Parse v1 text and return the v2 config as a dict."""
    out = {}
    section = out
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = out.setdefault(line[1:-1], {})
            continue
        key, _, value = line.partition("=")
        section[key.strip()] = _value(value)
    out["version"] = 2
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    with open(argv[0]) as f:
        cfg = migrate(f.read())
    with open(argv[1], "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
