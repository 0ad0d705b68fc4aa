#!/bin/bash
# Builds /app as a git repo: main (bulk discount + coupons) and feature/regional-tax, not yet merged.
set -euo pipefail
cd /app
export GIT_AUTHOR_NAME="Dana Whitfield" GIT_AUTHOR_EMAIL="dana@shopcore.example"
export GIT_COMMITTER_NAME="Dana Whitfield" GIT_COMMITTER_EMAIL="dana@shopcore.example"
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
t=1704100000
commit() { t=$((t+5400)); GIT_AUTHOR_DATE="@$t +0000" GIT_COMMITTER_DATE="@$t +0000" git commit -q -m "$1"; }

git init -q -b main .
git config user.name "Agent" && git config user.email "agent@shopcore.example"
mkdir -p tests
cat > pricing.py <<'PY'
"""Order pricing for the shop checkout."""
from decimal import Decimal, ROUND_HALF_UP

CENT = Decimal("0.01")
TAX_RATE = Decimal("0.20")


def line_total(item):
    """Price of one order line before tax."""
    return Decimal(item["unit_price"]) * item["qty"]


def order_total(items):
    """Total of an order including tax, rounded to the cent."""
    subtotal = sum((line_total(i) for i in items), Decimal("0"))
    tax = (subtotal * TAX_RATE).quantize(CENT, rounding=ROUND_HALF_UP)
    return (subtotal + tax).quantize(CENT, rounding=ROUND_HALF_UP)
PY
cat > tests/test_pricing.py <<'PY'
from decimal import Decimal

import pricing


def test_simple_order():
    items = [{"unit_price": "2.50", "qty": 2}, {"unit_price": "1.00", "qty": 1}]
    assert pricing.order_total(items) == Decimal("7.20")


def test_empty_order():
    assert pricing.order_total([]) == Decimal("0.00")
PY
cat > CHANGELOG.md <<'MD'
# Changelog

## Unreleased
MD
printf '__pycache__/\n.pytest_cache/\n' > .gitignore
git add -A && commit "Initial pricing module"

git checkout -q -b feature/regional-tax
sed -i 's/^def line_total(item):/def _line_subtotal(item):/; s/(line_total(i) for i in items)/(_line_subtotal(i) for i in items)/' pricing.py
commit_all() { git add -A && commit "$1"; }
commit_all "Rename line_total to _line_subtotal"
cat > pricing.py <<'PY'
"""Order pricing for the shop checkout."""
from decimal import Decimal, ROUND_HALF_UP

CENT = Decimal("0.01")
TAX_RATES = {
    "UK": Decimal("0.20"),
    "DE": Decimal("0.19"),
    "US-CA": Decimal("0.0725"),
    "HK": Decimal("0"),
}


def tax_rate(region):
    """VAT / sales-tax rate for a region code; ValueError for unknown regions."""
    try:
        return TAX_RATES[region]
    except KeyError:
        raise ValueError(f"unknown region: {region!r}") from None


def _line_subtotal(item):
    """Price of one order line before tax."""
    return Decimal(item["unit_price"]) * item["qty"]


def order_total(items, region="UK"):
    """Total of an order including the region's tax, rounded to the cent."""
    subtotal = sum((_line_subtotal(i) for i in items), Decimal("0"))
    tax = (subtotal * tax_rate(region)).quantize(CENT, rounding=ROUND_HALF_UP)
    return (subtotal + tax).quantize(CENT, rounding=ROUND_HALF_UP)
PY
cat >> tests/test_pricing.py <<'PY'


def test_region_de():
    items = [{"unit_price": "10.00", "qty": 3}]
    assert pricing.order_total(items, region="DE") == Decimal("35.70")


def test_region_us_ca_rounding():
    items = [{"unit_price": "19.99", "qty": 1}]
    assert pricing.order_total(items, region="US-CA") == Decimal("21.44")


def test_unknown_region():
    import pytest
    with pytest.raises(ValueError):
        pricing.order_total([], region="XX")
PY
cat >> CHANGELOG.md <<'MD'
- Per-region tax rates (UK, DE, US-CA, HK) via `order_total(items, region=...)`.
MD
commit_all "Add per-region tax rates"

git checkout -q main
cat > pricing.py <<'PY'
"""Order pricing for the shop checkout."""
from decimal import Decimal, ROUND_HALF_UP

CENT = Decimal("0.01")
TAX_RATE = Decimal("0.20")
BULK_THRESHOLD = 10
BULK_DISCOUNT = Decimal("0.05")


def line_total(item):
    """Price of one order line before tax; lines of BULK_THRESHOLD+ units get BULK_DISCOUNT off."""
    total = Decimal(item["unit_price"]) * item["qty"]
    if item["qty"] >= BULK_THRESHOLD:
        total -= (total * BULK_DISCOUNT).quantize(CENT, rounding=ROUND_HALF_UP)
    return total


def order_total(items):
    """Total of an order including tax, rounded to the cent."""
    subtotal = sum((line_total(i) for i in items), Decimal("0"))
    tax = (subtotal * TAX_RATE).quantize(CENT, rounding=ROUND_HALF_UP)
    return (subtotal + tax).quantize(CENT, rounding=ROUND_HALF_UP)
PY
cat >> tests/test_pricing.py <<'PY'


def test_bulk_discount():
    items = [{"unit_price": "2.00", "qty": 10}]
    assert pricing.order_total(items) == Decimal("22.80")
PY
cat >> CHANGELOG.md <<'MD'
- Bulk discount: 5% off any line with 10 or more units.
MD
git add -A && commit "Bulk discount for large quantities"
python3 - <<'PY'
import re
src = open("pricing.py").read()
src = src.replace('BULK_DISCOUNT = Decimal("0.05")\n', 'BULK_DISCOUNT = Decimal("0.05")\nCOUPONS = {"SAVE10": Decimal("0.10"), "HALFOFF": Decimal("0.50")}\n')
old = src[src.index("def order_total"):]
new = '''def order_total(items, coupon=None):
    """Total of an order including tax, rounded to the cent.

    A coupon code takes its percentage off the subtotal before tax; unknown codes raise ValueError.
    """
    subtotal = sum((line_total(i) for i in items), Decimal("0"))
    if coupon is not None:
        if coupon not in COUPONS:
            raise ValueError(f"unknown coupon: {coupon!r}")
        subtotal -= (subtotal * COUPONS[coupon]).quantize(CENT, rounding=ROUND_HALF_UP)
    tax = (subtotal * TAX_RATE).quantize(CENT, rounding=ROUND_HALF_UP)
    return (subtotal + tax).quantize(CENT, rounding=ROUND_HALF_UP)
'''
open("pricing.py", "w").write(src.replace(old, new))
PY
cat >> tests/test_pricing.py <<'PY'


def test_coupon_save10():
    items = [{"unit_price": "5.00", "qty": 4}]
    assert pricing.order_total(items, coupon="SAVE10") == Decimal("21.60")


def test_unknown_coupon():
    import pytest
    with pytest.raises(ValueError):
        pricing.order_total([], coupon="FREE")
PY
cat >> CHANGELOG.md <<'MD'
- Coupon codes SAVE10 and HALFOFF via `order_total(items, coupon=...)`.
MD
git add -A && commit "Coupon codes"
git gc -q --prune=now
