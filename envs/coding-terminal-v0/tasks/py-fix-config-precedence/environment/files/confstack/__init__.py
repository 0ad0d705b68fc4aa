"""Layered configuration: defaults < config files < environment < command line."""
from .loader import load_config
from .merge import deep_merge
from .coerce import coerce, ConfigTypeError

__all__ = ["load_config", "deep_merge", "coerce", "ConfigTypeError"]
