import decimal
import math
import random
from decimal import Decimal
from fractions import Fraction

import pytest

from money import Money, CurrencyMismatch, CURRENCIES

DIG = {"USD": 2, "EUR": 2, "GBP": 2, "CHF": 2, "JPY": 0, "KRW": 0, "KWD": 3, "BHD": 3}


def sig(m):
    """A builtin-only signature of a Money value; fails for anything that is not a real Money."""
    assert type(m) is Money
    assert type(m.currency) is str and type(m.minor_units) is int and type(m.amount) is Decimal
    return (m.currency, m.minor_units, str(m.amount), str(m), repr(m))


def expect(units, cur):
    d = DIG[cur]
    sign = "-" if units < 0 else ""
    u = abs(units)
    text = f"{sign}{u}" if d == 0 else f"{sign}{u // 10**d}.{u % 10**d:0{d}d}"
    return (cur, units, text, f"{text} {cur}", f"Money('{text}', '{cur}')")


def ref_round(x, mode):
    if mode == "half_even":
        return round(x)
    if mode == "half_up":
        r = math.floor(abs(x) + Fraction(1, 2))
        return r if x >= 0 else -r
    return {"down": math.trunc, "floor": math.floor, "ceiling": math.ceil}[mode](x)


def ref_allocate(units, ratios):
    R = sum(Fraction(r) for r in ratios)
    u = abs(units)
    exact = [u * Fraction(r) / R for r in ratios]
    base = [math.floor(e) for e in exact]
    order = sorted(range(len(ratios)), key=lambda i: (-(exact[i] - base[i]), i))
    for i in order[: u - sum(base)]:
        base[i] += 1
    return [(-b if units < 0 else b) for b in base]


def rand_dec(rng, places):
    n = rng.randint(-10**9, 10**9)
    return Decimal(n).scaleb(-places)


# ---------------- construction & formatting ----------------

def test_construction_and_formatting():
    assert sig(Money("12.3", "USD")) == expect(1230, "USD")
    assert sig(Money(5, "EUR")) == expect(500, "EUR")
    assert sig(Money(Decimal("-0.05"), "EUR")) == expect(-5, "EUR")
    assert sig(Money("1000", "JPY")) == expect(1000, "JPY")
    assert sig(Money(Decimal("1E+3"), "KRW")) == expect(1000, "KRW")
    assert sig(Money("-0.000", "KWD")) == expect(0, "KWD")
    assert sig(Money("1.234", "BHD")) == expect(1234, "BHD")
    assert sig(Money.from_minor(-123456, "GBP")) == expect(-123456, "GBP")
    assert str(Money("0", "USD").amount) == "0.00"
    assert str(Money("-0.00", "USD").amount) == "0.00"


@pytest.mark.parametrize("args,exc", [
    (("1.005", "USD"), ValueError), (("1.5", "JPY"), ValueError), (("NaN", "USD"), ValueError),
    (("Infinity", "EUR"), ValueError), (("abc", "USD"), ValueError), (("1", "usd"), ValueError),
    (("1", "XXX"), ValueError), ((1.5, "USD"), TypeError), ((True, "USD"), TypeError), ((None, "USD"), TypeError),
    ((Decimal("0.001"), "EUR"), ValueError), ((Decimal("sNaN"), "EUR"), ValueError),
])
def test_construction_errors(args, exc):
    with pytest.raises(exc):
        Money(*args)


def test_immutable_and_hashable():
    m = Money("1.00", "USD")
    with pytest.raises(Exception):
        m.currency = "EUR"
    assert sig(m) == expect(100, "USD")
    d = {Money("1", "USD"): "a", Money("1", "EUR"): "b"}
    assert d[Money("1.00", "USD")] == "a" and len(d) == 2
    assert len({Money("2", "JPY"), Money.from_minor(2, "JPY"), Money("2.00", "USD")}) == 2


# ---------------- rounding ----------------

@pytest.mark.parametrize("mode,cases", [
    ("half_even", [("0.125", 12), ("0.135", 14), ("-0.125", -12), ("-0.135", -14), ("2.5", 250), ("0.1250001", 13)]),
    ("half_up", [("0.125", 13), ("-0.125", -13), ("0.1249", 12), ("-0.135", -14)]),
    ("down", [("0.129", 12), ("-0.129", -12)]),
    ("floor", [("0.129", 12), ("-0.121", -13)]),
    ("ceiling", [("0.121", 13), ("-0.129", -12), ("0.12", 12)]),
])
def test_from_decimal_modes(mode, cases):
    for value, units in cases:
        assert sig(Money.from_decimal(value, "USD", rounding=mode)) == expect(units, "USD"), value


def test_from_decimal_randomized():
    rng = random.Random(3)
    quant = {"half_even": decimal.ROUND_HALF_EVEN, "half_up": decimal.ROUND_HALF_UP, "down": decimal.ROUND_DOWN,
             "floor": decimal.ROUND_FLOOR, "ceiling": decimal.ROUND_CEILING}
    ctx = decimal.Context(prec=100)
    for _ in range(1500):
        cur = rng.choice(sorted(DIG))
        value = rand_dec(rng, rng.randint(0, 6))
        mode = rng.choice(sorted(quant))
        arg = rng.choice([value, str(value)])
        q = value.quantize(Decimal(1).scaleb(-DIG[cur]), rounding=quant[mode], context=ctx)
        units = int(ctx.scaleb(q, DIG[cur]))
        assert sig(Money.from_decimal(arg, cur, rounding=mode)) == expect(units, cur), (value, cur, mode)
    with pytest.raises(ValueError):
        Money.from_decimal("1", "USD", rounding="bankers")


# ---------------- arithmetic ----------------

def test_add_sub_neg_abs_sum():
    a, b = Money("10.10", "EUR"), Money("0.95", "EUR")
    assert sig(a + b) == expect(1105, "EUR")
    assert sig(b - a) == expect(-915, "EUR")
    assert sig(-a) == expect(-1010, "EUR")
    assert sig(abs(b - a)) == expect(915, "EUR")
    assert sig(sum([a, b, b])) == expect(1200, "EUR")
    with pytest.raises(CurrencyMismatch):
        a + Money("1", "USD")
    with pytest.raises(CurrencyMismatch):
        a - Money("1", "GBP")
    assert issubclass(CurrencyMismatch, ValueError)
    for bad in (1, Decimal("1"), 0.5, "1"):
        with pytest.raises(TypeError):
            a + bad
    with pytest.raises(TypeError):
        1 + a


def test_mul_div_randomized():
    rng = random.Random(11)
    for _ in range(2000):
        cur = rng.choice(sorted(DIG))
        units = rng.randint(-10**12, 10**12)
        m = Money.from_minor(units, cur)
        k = rng.choice([rng.randint(-1000, 1000), rand_dec(rng, rng.randint(1, 6))])
        exp = round(units * Fraction(k))
        assert sig(m * k) == expect(exp, cur)
        assert sig(k * m) == expect(exp, cur)
        if k != 0:
            assert sig(m / k) == expect(round(units / Fraction(k)), cur)


def test_mul_div_errors():
    m = Money("3.00", "USD")
    for bad in (1.5, True, m, "2", None):
        with pytest.raises(TypeError):
            m * bad
        with pytest.raises(TypeError):
            m / bad
    with pytest.raises(ZeroDivisionError):
        m / 0
    with pytest.raises(ZeroDivisionError):
        m / Decimal("0.000")


def test_huge_amounts_stay_exact():
    units = 10**20 + 7
    m = Money.from_minor(units, "USD")
    assert sig(m) == expect(units, "USD")
    assert sig(m * Decimal("1.000001")) == expect(round(units * Fraction("1.000001")), "USD")
    assert sig(m / 3) == expect(round(Fraction(units, 3)), "USD")
    assert sig(Money(str(m.amount), "USD") + Money("0.01", "USD")) == expect(units + 1, "USD")
    parts = m.allocate([1, 2, 3, Decimal("0.7")])
    assert [p.minor_units for p in parts] == ref_allocate(units, [1, 2, 3, Decimal("0.7")])


# ---------------- comparison ----------------

def test_equality_and_ordering():
    a, b = Money("1.00", "USD"), Money("1.01", "USD")
    assert (a == Money(1, "USD")) is True and (a != b) is True
    assert (a == Money("1.00", "EUR")) is False and (a == 1) is False and (a == "1.00 USD") is False
    assert (a < b, a <= b, b > a, b >= a, a < a, a <= a) == (True, True, True, True, False, True)
    with pytest.raises(CurrencyMismatch):
        a < Money("2", "EUR")
    with pytest.raises(CurrencyMismatch):
        a >= Money("2", "EUR")
    with pytest.raises(TypeError):
        a < 2
    assert [sig(x) for x in sorted([b, a, Money("-3", "USD")])] == [expect(-300, "USD"), expect(100, "USD"), expect(101, "USD")]


# ---------------- allocation ----------------

def test_allocation_examples():
    m = Money("100.00", "USD")
    assert [sig(x) for x in m.split(3)] == [expect(3334, "USD"), expect(3333, "USD"), expect(3333, "USD")]
    assert [x.minor_units for x in Money("0.05", "EUR").allocate([3, 7])] == [2, 3]
    assert [x.minor_units for x in Money("-0.05", "EUR").allocate([3, 7])] == [-2, -3]
    assert [x.minor_units for x in Money("10", "JPY").allocate([1, 0, 1, 1])] == [4, 0, 3, 3]
    assert [x.minor_units for x in Money("0.01", "USD").allocate([Decimal("0.5"), Decimal("0.5")])] == [1, 0]
    assert [x.minor_units for x in Money("0.07", "USD").allocate((1, 1, 5))] == [1, 1, 5]


@pytest.mark.parametrize("ratios", [[], [0, 0], [-1, 2], [1.5, 1], [True, 1], ["1", 2], None, 3])
def test_allocation_errors(ratios):
    with pytest.raises((ValueError, TypeError)) as ei:
        Money("1", "USD").allocate(ratios)
    if ratios in ([], [0, 0], [-1, 2]):
        assert ei.type is ValueError


def test_split_errors():
    for bad in (0, -1, 1.0, True):
        with pytest.raises((ValueError, TypeError)):
            Money("1", "USD").split(bad)


def test_allocation_randomized():
    rng = random.Random(17)
    for _ in range(1500):
        cur = rng.choice(sorted(DIG))
        units = rng.randint(-10**7, 10**7)
        n = rng.randint(1, 7)
        ratios = [rng.choice([rng.randint(0, 9), rand_dec(rng, 2).copy_abs() % 10]) for _ in range(n)]
        if sum(Fraction(r) for r in ratios) == 0:
            ratios[0] = 1
        got = Money.from_minor(units, cur).allocate(ratios)
        assert type(got) is list
        assert [sig(x) for x in got] == [expect(u, cur) for u in ref_allocate(units, ratios)], (units, ratios)


# ---------------- conversion ----------------

def test_convert():
    assert sig(Money("10.00", "USD").convert("151.235", "JPY")) == expect(1512, "JPY")
    assert sig(Money("1000", "JPY").convert(Decimal("0.006625"), "USD")) == expect(662, "USD")
    assert sig(Money("1000", "JPY").convert(Decimal("0.006635"), "USD")) == expect(664, "USD")
    assert sig(Money("2.50", "EUR").convert(1, "KWD")) == expect(2500, "KWD")
    for bad, exc in ((0, ValueError), ("-1", ValueError), (1.1, TypeError)):
        with pytest.raises(exc):
            Money("1", "USD").convert(bad, "EUR")
    with pytest.raises(ValueError):
        Money("1", "USD").convert(1, "XYZ")
