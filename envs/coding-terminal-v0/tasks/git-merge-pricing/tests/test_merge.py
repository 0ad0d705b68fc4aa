import random
import subprocess
from decimal import Decimal, ROUND_HALF_UP

import pytest

MAIN_TIP = "ba6d18b9008a8c63ca89d85ba357537d3fc8e671"
FEATURE_TIP = "d0de16071af3eaa3ee12fc8a61259d0ae0ebea48"
GIT = "/usr/bin/git"
CENT = Decimal("0.01")
RATES = {"UK": Decimal("0.20"), "DE": Decimal("0.19"), "US-CA": Decimal("0.0725"), "HK": Decimal("0")}
COUPONS = {"SAVE10": Decimal("0.10"), "HALFOFF": Decimal("0.50")}


def git(*args):
    return subprocess.run([GIT, "-C", "/app", *args], capture_output=True, text=True, check=True).stdout.strip()


def reference(items, coupon=None, region="UK"):
    sub = Decimal("0")
    for it in items:
        t = Decimal(it["unit_price"]) * it["qty"]
        if it["qty"] >= 10:
            t -= (t * Decimal("0.05")).quantize(CENT, rounding=ROUND_HALF_UP)
        sub += t
    if coupon is not None:
        sub -= (sub * COUPONS[coupon]).quantize(CENT, rounding=ROUND_HALF_UP)
    tax = (sub * RATES[region]).quantize(CENT, rounding=ROUND_HALF_UP)
    return (sub + tax).quantize(CENT, rounding=ROUND_HALF_UP)


def check(got, want):
    assert type(got) is Decimal
    assert str(got) == str(want)


def test_head_is_merge_of_both_tips():
    assert git("rev-parse", "--abbrev-ref", "HEAD") == "main"
    parents = git("rev-list", "--parents", "-n", "1", "HEAD").split()
    assert parents[1:] == [MAIN_TIP, FEATURE_TIP]
    assert git("rev-parse", "feature/regional-tax") == FEATURE_TIP


def test_worktree_clean_and_no_markers():
    assert git("status", "--porcelain", "--untracked-files=no") == ""
    for f in ("pricing.py", "tests/test_pricing.py", "CHANGELOG.md"):
        text = git("show", f"HEAD:{f}")
        assert "<<<<<<<" not in text and ">>>>>>>" not in text and "\n=======\n" not in text


def test_helpers_and_naming():
    import pricing
    assert not hasattr(pricing, "line_total")
    check(pricing._line_subtotal({"unit_price": "2.00", "qty": 10}), Decimal("19.00"))
    check(pricing._line_subtotal({"unit_price": "2.00", "qty": 9}).quantize(CENT), Decimal("18.00"))
    assert str(pricing.tax_rate("DE")) == "0.19"
    with pytest.raises(ValueError):
        pricing.tax_rate("FR")


def test_combined_examples():
    import pricing
    items = [{"unit_price": "3.10", "qty": 12}, {"unit_price": "0.99", "qty": 3}]
    check(pricing.order_total(items, coupon="SAVE10", region="DE"), reference(items, "SAVE10", "DE"))
    check(pricing.order_total(items, region="US-CA", coupon="HALFOFF"), reference(items, "HALFOFF", "US-CA"))
    check(pricing.order_total(items), reference(items))
    check(pricing.order_total([], region="HK"), Decimal("0.00"))


def test_errors_still_raised():
    import pricing
    with pytest.raises(ValueError):
        pricing.order_total([{"unit_price": "1.00", "qty": 1}], coupon="BOGUS", region="DE")
    with pytest.raises(ValueError):
        pricing.order_total([{"unit_price": "1.00", "qty": 1}], coupon="SAVE10", region="MARS")


@pytest.mark.parametrize("seed", [1, 2])
def test_randomized_orders(seed):
    import pricing
    rng = random.Random(seed)
    for _ in range(150):
        items = [{"unit_price": f"{rng.randint(1, 5000) / 100:.2f}", "qty": rng.choice([1, 2, 5, 9, 10, 11, 25])}
                 for _ in range(rng.randint(0, 5))]
        coupon = rng.choice([None, "SAVE10", "HALFOFF"])
        region = rng.choice(list(RATES))
        check(pricing.order_total(items, coupon=coupon, region=region), reference(items, coupon, region))


def test_repo_tests_from_both_branches_pass():
    text = open("/app/tests/test_pricing.py").read()
    for name in ("test_simple_order", "test_empty_order", "test_region_de", "test_region_us_ca_rounding",
                 "test_unknown_region", "test_bulk_discount", "test_coupon_save10", "test_unknown_coupon"):
        assert f"def {name}(" in text
    r = subprocess.run(["/usr/bin/python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_pricing.py"],
                       cwd="/app", capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "8 passed" in r.stdout


def test_changelog_keeps_both_entries():
    text = git("show", "HEAD:CHANGELOG.md")
    assert "Bulk discount" in text and "Coupon codes" in text and "Per-region tax rates" in text
