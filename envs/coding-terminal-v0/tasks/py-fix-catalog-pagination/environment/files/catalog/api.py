from . import paging


class PageOutOfRange(LookupError):
    pass


def list_products(store, page=1, per_page=20, category=None):
    """Return one page of products as a JSON-ready dict."""
    paging.validate(page, per_page)
    items = store.query(category=category)
    total = len(items)
    pages = paging.page_count(total, per_page)
    if page > pages:
        raise PageOutOfRange(f"page {page} of {pages}")
    start, stop = paging.page_bounds(page, per_page)
    window = items[start:stop]
    return {
        "items": [p.to_dict() for p in window],
        "page": page,
        "per_page": per_page,
        "total": total,
        "pages": pages,
        "has_prev": page > 1,
        "has_next": page < pages,
    }
