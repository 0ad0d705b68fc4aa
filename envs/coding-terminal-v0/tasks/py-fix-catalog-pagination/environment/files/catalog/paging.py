"""Page arithmetic shared by every listing endpoint.

Pages are 1-based. A listing always has at least one page, even when empty.
"""


def validate(page, per_page):
    if not isinstance(page, int) or page < 1:
        raise ValueError("page must be an integer >= 1")
    if not isinstance(per_page, int) or not 1 <= per_page <= 100:
        raise ValueError("per_page must be an integer between 1 and 100")


def page_count(total, per_page):
    return total // per_page + 1


def page_bounds(page, per_page):
    """Return (start, stop) indexes of the page, suitable for slicing."""
    start = (page - 1) * per_page
    stop = start + per_page - 1
    return start, stop
