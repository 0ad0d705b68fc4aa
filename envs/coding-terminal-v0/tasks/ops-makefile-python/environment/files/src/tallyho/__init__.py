"""tallyho: count things in log streams."""
from .core import count_levels, top_n

__version__ = "0.3.1"
__all__ = ["count_levels", "top_n"]
