from .models import Product


class ProductStore:
    """In-memory product storage. Query results are always sorted by sku."""

    def __init__(self, products=()):
        self._by_sku = {}
        for p in products:
            self.add(p)

    def add(self, product):
        if not isinstance(product, Product):
            raise TypeError("expected a Product")
        if product.sku in self._by_sku:
            raise KeyError(f"duplicate sku {product.sku!r}")
        self._by_sku[product.sku] = product

    def get(self, sku):
        return self._by_sku[sku]

    def __len__(self):
        return len(self._by_sku)

    def query(self, category=None):
        items = self._by_sku.values()
        if category is not None:
            items = [p for p in items if p.category == category]
        return sorted(items, key=lambda p: p.sku)
