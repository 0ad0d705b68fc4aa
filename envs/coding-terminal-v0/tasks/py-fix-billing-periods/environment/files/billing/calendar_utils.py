import datetime as _dt

_DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]


def is_leap(year):
    """Gregorian leap year."""
    return year % 4 == 0


def days_in_month(year, month):
    if month == 2 and is_leap(year):
        return 29
    return _DAYS[month - 1]


def add_months(d, n):
    """Shift date `d` by `n` months (n may be negative), clamping the day to the target month's length."""
    index = d.year * 12 + (d.month - 1) + n
    year, month0 = divmod(index, 12)
    month = month0 + 1
    return _dt.date(year, month, min(d.day, days_in_month(year, month)))
