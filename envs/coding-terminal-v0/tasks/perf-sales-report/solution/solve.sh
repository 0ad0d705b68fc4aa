#!/bin/bash
set -e
cat > /app/report.py <<'PY'
#!/usr/bin/env python3
"""Monthly sales report.

usage: report.py SALES_CSV PRODUCTS_CSV OUTPUT_TXT

SALES_CSV    columns: order_id,sku,quantity,discount_pct,customer,region
PRODUCTS_CSV columns: sku,name,category,unit_price
"""
import csv
import sys
from decimal import Decimal, ROUND_HALF_UP

CENT = Decimal("0.01")
HUNDRED = Decimal(100)


def load_products(products_path):
    products = {}
    with open(products_path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            sku = row["sku"].strip()
            if sku not in products:  # first row wins
                products[sku] = (row["category"], Decimal(row["unit_price"]))
    return products


def build_report(sales_path, products_path):
    products = load_products(products_path)
    cat_units = {}
    cat_revenue = {}
    cat_customers = {}
    region_orders = {}
    region_customers = {}
    region_cat_revenue = {}
    unknown = 0
    disc_cache = {}

    with open(sales_path, newline="", encoding="utf-8") as fh:
        for sale in csv.DictReader(fh):
            product = products.get(sale["sku"].strip())
            if product is None:
                unknown += 1
                continue
            category, price = product
            qty = int(sale["quantity"])
            d = sale["discount_pct"] or "0"
            factor = disc_cache.get(d)
            if factor is None:
                factor = disc_cache[d] = HUNDRED - Decimal(d)
            revenue = (price * qty * factor / HUNDRED).quantize(CENT, rounding=ROUND_HALF_UP)
            customer = sale["customer"]
            region = sale["region"]

            if category not in cat_units:
                cat_units[category] = 0
                cat_revenue[category] = Decimal(0)
                cat_customers[category] = set()
            cat_units[category] += qty
            cat_revenue[category] += revenue
            cat_customers[category].add(customer)

            if region not in region_orders:
                region_orders[region] = set()
                region_customers[region] = set()
                region_cat_revenue[region] = {}
            region_orders[region].add(sale["order_id"])
            region_customers[region].add(customer)
            rc = region_cat_revenue[region]
            rc[category] = rc.get(category, Decimal(0)) + revenue

    parts = ["CATEGORY SUMMARY\n"]
    for category in sorted(cat_units):
        parts.append("%s\t%d\t%s\t%d\n" % (category, cat_units[category], cat_revenue[category],
                                           len(cat_customers[category])))
    parts.append("REGION SUMMARY\n")
    for region in sorted(region_orders):
        per_cat = region_cat_revenue[region]
        top = sorted(per_cat.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        parts.append("%s\t%d\t%d\t%s\n" % (region, len(region_orders[region]),
                                           len(region_customers[region]), top))
    parts.append("UNKNOWN SKUS\t%d\n" % unknown)
    return "".join(parts)


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__)
        return 2
    report = build_report(argv[1], argv[2])
    with open(argv[3], "w", encoding="utf-8") as out:
        out.write(report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
PY
