"""Tiny product catalog used by the storefront admin pages."""
from .models import Product
from .store import ProductStore
from .api import list_products, PageOutOfRange

__all__ = ["Product", "ProductStore", "list_products", "PageOutOfRange"]
