#!/bin/bash
set -e
cd /app
cat > confstack/merge.py <<'PY'
import copy


def deep_merge(base, override):
    """Return a new dict: `override` merged into `base`.

    Nested dicts are merged recursively at any depth; any other value in `override` replaces
    the one in `base`. Neither argument is modified, and the result shares no dicts with them.
    """
    result = {key: copy.deepcopy(value) for key, value in base.items()}
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result
PY
/usr/bin/python3 - <<'PY'
p = "confstack/coerce.py"
s = open(p).read()
old_int = "        if isinstance(default, int):\n            return int(raw)\n"
assert old_int in s
s = s.replace(old_int, "")
s = s.replace("        if isinstance(default, float):\n",
              "        if isinstance(default, int):\n            return int(raw)\n        if isinstance(default, float):\n")
open(p, "w").write(s)
p = "confstack/loader.py"
s = open(p).read()
old = """    if cli:
        config = deep_merge(config, _dotted_to_tree(cli))
    for layer in read_env(environ, prefix, config):
        config = deep_merge(config, layer)
"""
new = """    for layer in read_env(environ, prefix, config):
        config = deep_merge(config, layer)
    if cli:
        config = deep_merge(config, _dotted_to_tree(cli))
"""
assert old in s
s = s.replace(old, new)
open(p, "w").write(s)
PY
