import json

from .coerce import coerce


def read_file(path):
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level must be an object")
    return data


def _lookup(tree, parts):
    node = tree
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _nest(parts, value):
    out = value
    for part in reversed(parts):
        out = {part: out}
    return out


def read_env(environ, prefix, schema):
    """Map PREFIX_SECTION__KEY=value variables onto keys that exist in `schema`.

    `APP_DB__HOST` addresses `db.host` (double underscore separates levels, names are lowercased).
    Variables for keys that do not exist in `schema`, or that address a whole section, are ignored.
    Values are coerced to the type of the schema's value.
    """
    layers = []
    for name in sorted(environ):
        if not name.startswith(prefix):
            continue
        parts = name[len(prefix):].lower().split("__")
        found, current = _lookup(schema, parts)
        if not found or isinstance(current, dict):
            continue
        layers.append(_nest(parts, coerce(environ[name], current)))
    return layers
