import json
import math
import random

import pytest

import catalog
from catalog import paging


def make_store(n, seed=0, categories=("tools", "garden", "toys")):
    rng = random.Random(seed)
    skus = [f"SKU-{rng.randrange(10**6):06d}-{i}" for i in range(n)]
    products = [
        catalog.Product(sku=s, name=f"item {i}", category=categories[i % len(categories)], price_cents=100 + i)
        for i, s in enumerate(skus)
    ]
    return catalog.ProductStore(products), products


def collect(store, per_page, category=None):
    first = catalog.list_products(store, page=1, per_page=per_page, category=category)
    pages = first["pages"]
    assert type(pages) is int
    seen = []
    for n in range(1, pages + 1):
        res = catalog.list_products(store, page=n, per_page=per_page, category=category)
        assert type(res) is dict
        seen.extend(json.loads(json.dumps(res["items"])))
    return pages, seen


# ---------------- FAIL_TO_PASS ----------------

@pytest.mark.parametrize("n,per_page", [(40, 20), (41, 20), (39, 20), (7, 1), (100, 10), (5, 100), (60, 7)])
def test_every_product_on_exactly_one_page(n, per_page):
    store, products = make_store(n, seed=n * 31 + per_page)
    pages, seen = collect(store, per_page)
    assert pages == max(1, math.ceil(n / per_page))
    expected = sorted((p.to_dict() for p in products), key=lambda d: d["sku"])
    assert json.dumps(seen) == json.dumps(expected)


def test_exact_multiple_has_no_trailing_empty_page():
    store, _ = make_store(40)
    last = catalog.list_products(store, page=2, per_page=20)
    assert (last["pages"], last["has_next"], last["has_prev"], len(last["items"])) == (2, False, True, 20)
    with pytest.raises(catalog.PageOutOfRange):
        catalog.list_products(store, page=3, per_page=20)


def test_category_filtered_pages():
    store, products = make_store(30, seed=5)
    pages, seen = collect(store, 4, category="garden")
    garden = sorted((p.to_dict() for p in products if p.category == "garden"), key=lambda d: d["sku"])
    assert pages == 3
    assert json.dumps(seen) == json.dumps(garden)


@pytest.mark.parametrize("total,per_page,expected", [(0, 10, 1), (1, 10, 1), (10, 10, 1), (11, 10, 2), (20, 10, 2), (99, 33, 3), (100, 1, 100)])
def test_page_count_helper(total, per_page, expected):
    got = paging.page_count(total, per_page)
    assert type(got) is int and got == expected


def test_page_bounds_helper():
    for per_page in (1, 3, 20):
        for page in (1, 2, 5):
            got = paging.page_bounds(page, per_page)
            assert type(got) is tuple and tuple(type(x) for x in got) == (int, int)
            assert got == ((page - 1) * per_page, page * per_page)


# ---------------- PASS_TO_PASS ----------------

def test_empty_listing_has_one_page():
    store = catalog.ProductStore()
    res = catalog.list_products(store)
    assert json.dumps(res, sort_keys=True) == json.dumps(
        {"items": [], "page": 1, "per_page": 20, "total": 0, "pages": 1, "has_prev": False, "has_next": False},
        sort_keys=True,
    )
    with pytest.raises(catalog.PageOutOfRange):
        catalog.list_products(store, page=2)


@pytest.mark.parametrize("page,per_page", [(0, 10), (-1, 10), (1, 0), (1, 101), ("1", 10), (1, 2.0)])
def test_invalid_arguments(page, per_page):
    store, _ = make_store(5)
    with pytest.raises(ValueError):
        catalog.list_products(store, page=page, per_page=per_page)


def test_totals_and_keys():
    store, products = make_store(25, seed=9)
    res = catalog.list_products(store, page=1, per_page=10, category="toys")
    assert sorted(res) == ["has_next", "has_prev", "items", "page", "pages", "per_page", "total"]
    assert res["total"] == sum(1 for p in products if p.category == "toys")
    assert type(res["total"]) is int
    assert res["has_prev"] is False


def test_store_basics():
    store, products = make_store(6, seed=3)
    assert len(store) == 6
    assert store.get(products[2].sku) is products[2]
    with pytest.raises(KeyError):
        store.add(products[0])
    assert [p.sku for p in store.query()] == sorted(p.sku for p in products)
