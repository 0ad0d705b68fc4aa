#!/bin/bash
set -e
cat > /app/money.py <<'PY'
"""Exact money arithmetic."""
import math
from decimal import Decimal, InvalidOperation
from fractions import Fraction

# ISO 4217 code -> number of minor-unit digits. Do not change.
CURRENCIES = {"USD": 2, "EUR": 2, "GBP": 2, "CHF": 2, "JPY": 0, "KRW": 0, "KWD": 3, "BHD": 3}


class CurrencyMismatch(ValueError):
    pass


def _digits(currency):
    if type(currency) is not str or currency not in CURRENCIES:
        raise ValueError(f"unknown currency {currency!r}")
    return CURRENCIES[currency]


def _to_fraction(value, what="amount"):
    """int / str / Decimal -> exact Fraction."""
    if type(value) is bool or isinstance(value, float):
        raise TypeError(f"{what} must be int, str or Decimal")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, str):
        try:
            value = Decimal(value.strip())
        except InvalidOperation:
            raise ValueError(f"invalid {what} {value!r}") from None
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{what} must be finite")
        return Fraction(value)
    raise TypeError(f"{what} must be int, str or Decimal")


def _factor(k):
    if type(k) is bool or not isinstance(k, (int, Decimal)):
        return None
    return _to_fraction(k, "factor")


def _round(x, mode):
    if mode == "half_even":
        return round(x)
    if mode == "half_up":
        r = math.floor(abs(x) + Fraction(1, 2))
        return r if x >= 0 else -r
    if mode == "down":
        return math.trunc(x)
    if mode == "floor":
        return math.floor(x)
    if mode == "ceiling":
        return math.ceil(x)
    raise ValueError(f"unknown rounding {mode!r}")


class Money:
    __slots__ = ("_units", "_currency")

    def __init__(self, amount, currency):
        digits = _digits(currency)
        scaled = _to_fraction(amount) * 10 ** digits
        if scaled.denominator != 1:
            raise ValueError(f"{amount!r} is not representable in {currency}")
        object.__setattr__(self, "_units", int(scaled))
        object.__setattr__(self, "_currency", currency)

    def __setattr__(self, name, value):
        raise AttributeError("Money is immutable")

    @classmethod
    def from_minor(cls, units, currency):
        if type(units) is not int:
            raise TypeError("units must be int")
        _digits(currency)
        obj = object.__new__(cls)
        object.__setattr__(obj, "_units", units)
        object.__setattr__(obj, "_currency", currency)
        return obj

    @classmethod
    def from_decimal(cls, value, currency, rounding="half_even"):
        if rounding not in ("half_even", "half_up", "down", "floor", "ceiling"):
            raise ValueError(f"unknown rounding {rounding!r}")
        digits = _digits(currency)
        return cls.from_minor(_round(_to_fraction(value) * 10 ** digits, rounding), currency)

    @property
    def currency(self):
        return self._currency

    @property
    def minor_units(self):
        return self._units

    @property
    def amount(self):
        return Decimal(self._text())

    def _text(self):
        digits = CURRENCIES[self._currency]
        sign = "-" if self._units < 0 else ""
        u = abs(self._units)
        if digits == 0:
            return f"{sign}{u}"
        whole, frac = divmod(u, 10 ** digits)
        return f"{sign}{whole}.{frac:0{digits}d}"

    def __str__(self):
        return f"{self._text()} {self._currency}"

    def __repr__(self):
        return f"Money('{self._text()}', '{self._currency}')"

    def _same(self, other):
        if not isinstance(other, Money):
            return False
        if other._currency != self._currency:
            raise CurrencyMismatch(f"{self._currency} vs {other._currency}")
        return True

    def __add__(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        self._same(other)
        return Money.from_minor(self._units + other._units, self._currency)

    def __radd__(self, other):
        if type(other) is int and other == 0:
            return self
        return NotImplemented

    def __sub__(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        self._same(other)
        return Money.from_minor(self._units - other._units, self._currency)

    def __neg__(self):
        return Money.from_minor(-self._units, self._currency)

    def __abs__(self):
        return Money.from_minor(abs(self._units), self._currency)

    def __mul__(self, k):
        f = _factor(k)
        if f is None:
            return NotImplemented
        return Money.from_minor(round(self._units * f), self._currency)

    __rmul__ = __mul__

    def __truediv__(self, k):
        f = _factor(k)
        if f is None:
            return NotImplemented
        if f == 0:
            raise ZeroDivisionError("division of Money by zero")
        return Money.from_minor(round(self._units / f), self._currency)

    def __eq__(self, other):
        if not isinstance(other, Money):
            return NotImplemented
        return self._currency == other._currency and self._units == other._units

    def __hash__(self):
        return hash((self._currency, self._units))

    def _cmp(self, other):
        if not isinstance(other, Money):
            raise TypeError("can only compare Money with Money")
        self._same(other)
        return self._units - other._units

    def __lt__(self, other):
        return self._cmp(other) < 0

    def __le__(self, other):
        return self._cmp(other) <= 0

    def __gt__(self, other):
        return self._cmp(other) > 0

    def __ge__(self, other):
        return self._cmp(other) >= 0

    def allocate(self, ratios):
        if not isinstance(ratios, (list, tuple)) or not ratios:
            raise ValueError("ratios must be a non-empty list or tuple")
        fr = []
        for r in ratios:
            f = _factor(r)
            if f is None:
                raise ValueError("ratios must be int or Decimal")
            if f < 0:
                raise ValueError("ratios must be non-negative")
            fr.append(f)
        total = sum(fr)
        if total <= 0:
            raise ValueError("ratios must have a positive sum")
        units = abs(self._units)
        base, rems = [], []
        for f in fr:
            exact = units * f / total
            fl = math.floor(exact)
            base.append(fl)
            rems.append(exact - fl)
        left = units - sum(base)
        order = sorted(range(len(fr)), key=lambda i: (-rems[i], i))
        for i in order[:left]:
            base[i] += 1
        sign = -1 if self._units < 0 else 1
        return [Money.from_minor(sign * b, self._currency) for b in base]

    def split(self, n):
        if type(n) is not int or n < 1:
            raise ValueError("n must be an int >= 1")
        return self.allocate([1] * n)

    def convert(self, rate, currency):
        f = _factor(rate) if not isinstance(rate, str) else _to_fraction(rate, "rate")
        if f is None:
            raise TypeError("rate must be int, str or Decimal")
        if f <= 0:
            raise ValueError("rate must be positive")
        value = Fraction(self._units, 10 ** CURRENCIES[self._currency]) * f
        return Money.from_minor(round(value * 10 ** _digits(currency)), currency)
PY
