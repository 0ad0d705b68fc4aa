import calendar
import random
from datetime import date, timedelta
from fractions import Fraction

import pytest

import billing


# --- reference implementations (independent of the package) ---

def ref_add_months(d, n):
    y, m0 = divmod(d.year * 12 + d.month - 1 + n, 12)
    return date(y, m0 + 1, min(d.day, calendar.monthrange(y, m0 + 1)[1]))


def ref_split(start, end):
    chunks = []
    cur = start
    day = start
    while day < end:
        nxt = day + timedelta(days=1)
        if nxt == end or nxt.month != day.month:
            chunks.append((cur, nxt))
            cur = nxt
        day = nxt
    return chunks


def ref_cycle(anchor, day):
    k = 0
    while ref_add_months(anchor, k + 1) <= day:
        k += 1
    return ref_add_months(anchor, k), ref_add_months(anchor, k + 1)


def ref_lines(anchor, start, end, cents):
    out = []
    day = start
    while day < end:
        s, e = ref_cycle(anchor, day)
        ov = (min(e, end) - max(s, start)).days
        out.append((s, e, round(Fraction(cents * ov, (e - s).days))))
        day = e
    return out


def rand_date(rng, lo=1890, hi=2110):
    y = rng.randint(lo, hi)
    m = rng.randint(1, 12)
    return date(y, m, rng.randint(1, calendar.monthrange(y, m)[1]))


# ---------------- FAIL_TO_PASS ----------------

@pytest.mark.parametrize("year", [1900, 2000, 2100, 2024, 2023, 1600, 1700, 2400, 4, 1])
def test_leap_years_and_february(year):
    got = billing.is_leap(year)
    assert type(got) is bool and got == calendar.isleap(year)
    feb = billing.days_in_month(year, 2)
    assert type(feb) is int and feb == calendar.monthrange(year, 2)[1]


def test_split_mid_month_start():
    got = billing.split_by_month(date(2023, 1, 15), date(2023, 3, 10))
    assert repr(got) == repr([(date(2023, 1, 15), date(2023, 2, 1)), (date(2023, 2, 1), date(2023, 3, 1)),
                              (date(2023, 3, 1), date(2023, 3, 10))])


def test_split_randomized():
    rng = random.Random(20240131)
    for _ in range(400):
        a = rand_date(rng, 1895, 2105)
        b = a + timedelta(days=rng.randint(0, 500))
        assert repr(billing.split_by_month(a, b)) == repr(ref_split(a, b)), (a, b)


def test_anchor_on_31st_does_not_drift():
    got = billing.cycle_starts(date(2024, 1, 31), 8)
    assert repr(got) == repr([date(2024, 1, 31), date(2024, 2, 29), date(2024, 3, 31), date(2024, 4, 30),
                              date(2024, 5, 31), date(2024, 6, 30), date(2024, 7, 31), date(2024, 8, 31)])
    assert repr(billing.cycle_containing(date(2024, 1, 31), date(2024, 4, 15))) == repr((date(2024, 3, 31), date(2024, 4, 30)))


def test_cycles_randomized():
    rng = random.Random(7)
    for _ in range(300):
        anchor = rand_date(rng, 1890, 2100)
        n = rng.randint(1, 40)
        assert repr(billing.cycle_starts(anchor, n)) == repr([ref_add_months(anchor, k) for k in range(n)]), anchor
        day = anchor + timedelta(days=rng.randint(0, 1500))
        assert repr(billing.cycle_containing(anchor, day)) == repr(ref_cycle(anchor, day)), (anchor, day)


def test_add_months_across_century_februaries():
    assert repr(billing.add_months(date(2100, 1, 31), 1)) == repr(date(2100, 2, 28))
    assert repr(billing.add_months(date(2000, 3, 31), -1)) == repr(date(2000, 2, 29))
    assert repr(billing.add_months(date(1899, 12, 30), 2)) == repr(date(1900, 2, 28))


def test_invoice_lines_randomized():
    rng = random.Random(99)
    for _ in range(200):
        anchor = rand_date(rng, 1990, 2110)
        start = anchor + timedelta(days=rng.randint(0, 400))
        end = start + timedelta(days=rng.randint(0, 200))
        cents = rng.randint(0, 100000)
        assert repr(billing.invoice_lines(anchor, start, end, cents)) == repr(ref_lines(anchor, start, end, cents)), (anchor, start, end)


# ---------------- PASS_TO_PASS ----------------

def test_split_whole_months():
    got = billing.split_by_month(date(2023, 11, 1), date(2024, 2, 1))
    assert repr(got) == repr([(date(2023, 11, 1), date(2023, 12, 1)), (date(2023, 12, 1), date(2024, 1, 1)),
                              (date(2024, 1, 1), date(2024, 2, 1))])
    assert billing.split_by_month(date(2023, 5, 5), date(2023, 5, 5)) == []
    with pytest.raises(ValueError):
        billing.split_by_month(date(2023, 5, 6), date(2023, 5, 5))


def test_add_months_basic():
    assert repr(billing.add_months(date(2023, 1, 31), 1)) == repr(date(2023, 2, 28))
    assert repr(billing.add_months(date(2023, 12, 15), 1)) == repr(date(2024, 1, 15))
    assert repr(billing.add_months(date(2023, 1, 15), -13)) == repr(date(2021, 12, 15))


def test_cycles_with_early_anchor_day():
    got = billing.cycle_starts(date(2023, 10, 5), 4)
    assert repr(got) == repr([date(2023, 10, 5), date(2023, 11, 5), date(2023, 12, 5), date(2024, 1, 5)])
    assert repr(billing.cycle_containing(date(2023, 10, 5), date(2023, 12, 4))) == repr((date(2023, 11, 5), date(2023, 12, 5)))
    with pytest.raises(ValueError):
        billing.cycle_containing(date(2023, 10, 5), date(2023, 10, 4))


def test_prorate():
    p = billing.prorate(3000, date(2023, 4, 1), date(2023, 5, 1), date(2023, 4, 16), date(2023, 6, 1))
    assert type(p) is int and p == 1500
    assert billing.prorate(100, date(2023, 4, 1), date(2023, 5, 1), date(2023, 5, 2), date(2023, 6, 1)) == 0
    assert billing.prorate(5, date(2023, 4, 1), date(2023, 4, 3), date(2023, 4, 1), date(2023, 4, 2)) == 2
    assert billing.prorate(7, date(2023, 4, 1), date(2023, 4, 3), date(2023, 4, 1), date(2023, 4, 2)) == 4


def test_invoice_simple():
    got = billing.invoice_lines(date(2023, 3, 10), date(2023, 3, 25), date(2023, 4, 20), 3100)
    assert repr(got) == repr([(date(2023, 3, 10), date(2023, 4, 10), 1600), (date(2023, 4, 10), date(2023, 5, 10), 1033)])
