import csv
import io
import random
import subprocess
from decimal import Decimal, ROUND_HALF_UP

import pytest

CENT = Decimal("0.01")


def reference(sales_text, products_text):
    products = {}
    for row in csv.DictReader(io.StringIO(products_text, newline="")):
        sku = row["sku"].strip()
        if sku not in products:
            products[sku] = (row["category"], row["unit_price"])
    cat_units, cat_rev, cat_cust = {}, {}, {}
    reg_orders, reg_cust, reg_cat = {}, {}, {}
    unknown = 0
    for s in csv.DictReader(io.StringIO(sales_text, newline="")):
        p = products.get(s["sku"].strip())
        if p is None:
            unknown += 1
            continue
        cat, price = p
        qty = int(s["quantity"])
        gross = Decimal(price) * qty
        net = gross * (Decimal(100) - Decimal(s["discount_pct"] or "0")) / Decimal(100)
        rev = net.quantize(CENT, rounding=ROUND_HALF_UP)
        cat_units[cat] = cat_units.get(cat, 0) + qty
        cat_rev[cat] = cat_rev.get(cat, Decimal(0)) + rev
        cat_cust.setdefault(cat, set()).add(s["customer"])
        r = s["region"]
        reg_orders.setdefault(r, set()).add(s["order_id"])
        reg_cust.setdefault(r, set()).add(s["customer"])
        rc = reg_cat.setdefault(r, {})
        rc[cat] = rc.get(cat, Decimal(0)) + rev
    out = ["CATEGORY SUMMARY\n"]
    for c in sorted(cat_units):
        out.append("%s\t%d\t%s\t%d\n" % (c, cat_units[c], cat_rev[c], len(cat_cust[c])))
    out.append("REGION SUMMARY\n")
    for r in sorted(reg_orders):
        top = sorted(reg_cat[r].items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        out.append("%s\t%d\t%d\t%s\n" % (r, len(reg_orders[r]), len(reg_cust[r]), top))
    out.append("UNKNOWN SKUS\t%d\n" % unknown)
    return "".join(out)


CATS = ["Audio", "Cables", "Garden", "Kitchen", "Lighting", "Office", "Outdoor", "Toys", "Tools"]
REGIONS = ["APAC", "EMEA-North", "EMEA-South", "LATAM", "NA-East", "NA-West"]


def gen(rng, n_sales, n_products):
    w = io.StringIO(newline="")
    cw = csv.writer(w, lineterminator="\n")
    cw.writerow(["sku", "name", "category", "unit_price"])
    skus = []
    for i in range(n_products):
        sku = "SK%06d" % rng.randrange(10**6)
        skus.append(sku)
        price = "%d.%02d" % (rng.randrange(0, 500), rng.randrange(100))
        name = rng.choice(["Widget", "Lamp, desk", "Cable \"pro\"", "Hose", "Mug"]) + " %d" % i
        cw.writerow([rng.choice([sku, " " + sku, sku + " "]) if rng.random() < 0.1 else sku,
                     name, rng.choice(CATS), price])
    # some duplicated SKUs with a different category/price (first row must win)
    for _ in range(max(1, n_products // 50)):
        cw.writerow([rng.choice(skus), "dup", rng.choice(CATS), "%d.%02d" % (rng.randrange(500), rng.randrange(100))])
    products_text = w.getvalue()

    w = io.StringIO(newline="")
    cw = csv.writer(w, lineterminator="\n")
    cw.writerow(["order_id", "sku", "quantity", "discount_pct", "customer", "region"])
    n_orders = max(1, n_sales // 3)
    n_cust = max(1, n_sales // 5)
    for _ in range(n_sales):
        sku = rng.choice(skus) if rng.random() < 0.97 else "ZZ%06d" % rng.randrange(10**6)
        if rng.random() < 0.05:
            sku = " " + sku
        disc = rng.choice(["", "0", "5", "10", "12.5", "33.3", "50"])
        cw.writerow(["O%07d" % rng.randrange(n_orders), sku, rng.randrange(1, 40), disc,
                     "C%06d" % rng.randrange(n_cust), rng.choice(REGIONS)])
    return w.getvalue(), products_text


def run_report(tmp_path, sales, products, timeout=120):
    sp = tmp_path / "sales.csv"
    pp = tmp_path / "products.csv"
    op = tmp_path / "report.txt"
    sp.write_text(sales, encoding="utf-8")
    pp.write_text(products, encoding="utf-8")
    p = subprocess.run(["/usr/bin/python3", "/app/report.py", str(sp), str(pp), str(op)],
                       capture_output=True, text=True, timeout=timeout, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr[-2000:]
    return op.read_text(encoding="utf-8")


@pytest.mark.parametrize("seed", range(5))
def test_small_matches_reference(tmp_path, seed):
    rng = random.Random(500 + seed)
    sales, products = gen(rng, rng.randrange(100, 600), rng.randrange(20, 120))
    assert run_report(tmp_path, sales, products) == reference(sales, products)


def test_duplicate_sku_first_row_wins(tmp_path):
    products = ("sku,name,category,unit_price\n"
                "A1,Alpha,Toys,2.50\n"
                "B2,Beta,Garden,10.00\n"
                "A1,Alpha again,Tools,99.99\n")
    sales = ("order_id,sku,quantity,discount_pct,customer,region\n"
             "O1,A1,3,,C1,EMEA\n"
             "O1,B2,1,10,C1,EMEA\n"
             "O2,A1 ,1,33.3,C2,APAC\n"
             "O3,Q9,5,,C3,APAC\n")
    got = run_report(tmp_path, sales, products)
    assert got == ("CATEGORY SUMMARY\n"
                   "Garden\t1\t9.00\t1\n"
                   "Toys\t4\t9.17\t2\n"
                   "REGION SUMMARY\n"
                   "APAC\t1\t1\tToys\n"
                   "EMEA\t1\t1\tGarden\n"
                   "UNKNOWN SKUS\t1\n")


def test_top_category_tie_goes_alphabetical(tmp_path):
    products = "sku,name,category,unit_price\nX,x,Zeta,5.00\nY,y,Alpha,2.50\n"
    sales = ("order_id,sku,quantity,discount_pct,customer,region\n"
             "1,X,1,,c,R\n2,Y,2,,c,R\n")
    got = run_report(tmp_path, sales, products)
    assert got.endswith("REGION SUMMARY\nR\t2\t1\tAlpha\nUNKNOWN SKUS\t0\n"), got


def test_large_month_is_fast(tmp_path):
    rng = random.Random(99)
    sales, products = gen(rng, 100_000, 20_000)
    try:
        got = run_report(tmp_path, sales, products, timeout=25)
    except subprocess.TimeoutExpired:
        pytest.fail("report.py took more than 25 s on 100k sales / 20k products")
    assert got == reference(sales, products)
