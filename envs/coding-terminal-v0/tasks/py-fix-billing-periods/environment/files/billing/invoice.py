from .cycles import cycle_containing
from .proration import prorate


def invoice_lines(anchor, start, end, monthly_cents):
    """Invoice lines for service used during [start, end) on a plan anchored at `anchor`.

    One line per billing cycle touched: (cycle_start, cycle_end, cents), where cents is the
    monthly price prorated by the days of that cycle actually used.
    """
    if end < start or start < anchor:
        raise ValueError("bad service window")
    lines = []
    day = start
    while day < end:
        c_start, c_end = cycle_containing(anchor, day)
        lines.append((c_start, c_end, prorate(monthly_cents, c_start, c_end, start, end)))
        day = c_end
    return lines
