from .calendar_utils import add_months


def cycle_starts(anchor, count):
    """Start dates of the first `count` billing cycles of a subscription anchored at `anchor`.

    Cycle k starts at add_months(anchor, k): a subscription anchored on Jan 31 renews on
    Feb 28 (or 29), Mar 31, Apr 30, ... -- it never drifts away from the anchor day.
    """
    out = [anchor]
    while len(out) < count:
        out.append(add_months(out[-1], 1))
    return out[:count]


def cycle_containing(anchor, day):
    """Return (start, end), half-open, of the billing cycle that contains `day`.

    Raises ValueError when `day` is before `anchor`.
    """
    if day < anchor:
        raise ValueError("day before subscription anchor")
    start = anchor
    while True:
        nxt = add_months(start, 1)
        if day < nxt:
            return start, nxt
        start = nxt
