import os

from .merge import deep_merge
from .sources import read_file, read_env


def _dotted_to_tree(overrides):
    tree = {}
    for dotted, value in overrides.items():
        node = tree
        parts = dotted.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return tree


def load_config(defaults, files=(), environ=None, cli=None, prefix="APP_"):
    """Build the effective configuration.

    Precedence, lowest to highest: `defaults`, each file in `files` (later files win),
    environment variables (`environ`, default os.environ), then `cli` overrides
    (a dict of dotted keys to already-typed values, e.g. {"db.port": 5433}).
    """
    if environ is None:
        environ = os.environ
    config = deep_merge({}, defaults)
    for path in files:
        config = deep_merge(config, read_file(path))
    if cli:
        config = deep_merge(config, _dotted_to_tree(cli))
    for layer in read_env(environ, prefix, config):
        config = deep_merge(config, layer)
    return config
