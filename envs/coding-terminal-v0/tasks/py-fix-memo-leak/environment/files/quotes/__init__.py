"""Shipping quote engine."""
from .cache import memoize_method, clear_cache, cache_info
from .rates import RateTable
from .quote import Quoter

__all__ = ["memoize_method", "clear_cache", "cache_info", "RateTable", "Quoter"]
