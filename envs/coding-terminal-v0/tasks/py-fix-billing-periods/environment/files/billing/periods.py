import datetime as _dt

from .calendar_utils import days_in_month


def split_by_month(start, end):
    """Split the half-open range [start, end) at calendar-month boundaries.

    Returns a list of (chunk_start, chunk_end) tuples, half-open, in order, covering the range
    exactly; every chunk lies inside one calendar month. `start == end` gives []; `end < start`
    raises ValueError.
    """
    if end < start:
        raise ValueError("end before start")
    chunks = []
    cur = start
    while cur < end:
        nxt = cur + _dt.timedelta(days=days_in_month(cur.year, cur.month))
        chunks.append((cur, min(nxt, end)))
        cur = nxt
    return chunks
