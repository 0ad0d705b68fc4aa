#!/bin/bash
set -euo pipefail
cd /app
git merge --no-edit feature/regional-tax >/dev/null 2>&1 || true
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
BULK_THRESHOLD = 10
BULK_DISCOUNT = Decimal("0.05")
COUPONS = {"SAVE10": Decimal("0.10"), "HALFOFF": Decimal("0.50")}


def tax_rate(region):
    """VAT / sales-tax rate for a region code; ValueError for unknown regions."""
    try:
        return TAX_RATES[region]
    except KeyError:
        raise ValueError(f"unknown region: {region!r}") from None


def _line_subtotal(item):
    """Price of one order line before tax; lines of BULK_THRESHOLD+ units get BULK_DISCOUNT off."""
    total = Decimal(item["unit_price"]) * item["qty"]
    if item["qty"] >= BULK_THRESHOLD:
        total -= (total * BULK_DISCOUNT).quantize(CENT, rounding=ROUND_HALF_UP)
    return total


def order_total(items, coupon=None, region="UK"):
    """Total of an order including the region's tax, rounded to the cent.

    A coupon code takes its percentage off the subtotal before tax; unknown codes raise ValueError.
    """
    subtotal = sum((_line_subtotal(i) for i in items), Decimal("0"))
    if coupon is not None:
        if coupon not in COUPONS:
            raise ValueError(f"unknown coupon: {coupon!r}")
        subtotal -= (subtotal * COUPONS[coupon]).quantize(CENT, rounding=ROUND_HALF_UP)
    tax = (subtotal * tax_rate(region)).quantize(CENT, rounding=ROUND_HALF_UP)
    return (subtotal + tax).quantize(CENT, rounding=ROUND_HALF_UP)
PY
# both sides only appended tests / changelog lines: keep both, drop the markers
for f in tests/test_pricing.py CHANGELOG.md; do
  sed -i '/^<<<<<<< /d; /^=======$/d; /^>>>>>>> /d' "$f"
done
git add pricing.py tests/test_pricing.py CHANGELOG.md
git commit -q --no-edit
