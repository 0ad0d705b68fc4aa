from fractions import Fraction


def prorate(amount_cents, period_start, period_end, used_start, used_end):
    """Charge for the part of [period_start, period_end) overlapped by [used_start, used_end).

    amount_cents * overlap_days / period_days, rounded half to even, as an int.
    """
    period_days = (period_end - period_start).days
    if period_days <= 0:
        raise ValueError("empty period")
    lo = max(period_start, used_start)
    hi = min(period_end, used_end)
    overlap = max(0, (hi - lo).days)
    return round(Fraction(amount_cents * overlap, period_days))
