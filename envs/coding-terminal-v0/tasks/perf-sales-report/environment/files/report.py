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


def lookup_product(products_path, sku):
    # The product master is maintained by hand; if a SKU is listed twice the
    # first row is the authoritative one.
    with open(products_path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["sku"].strip() == sku:
                return row
    return None


def line_revenue(quantity, unit_price, discount_pct):
    gross = Decimal(unit_price) * quantity
    net = gross * (Decimal(100) - Decimal(discount_pct)) / Decimal(100)
    return net.quantize(CENT, rounding=ROUND_HALF_UP)


def build_report(sales_path, products_path):
    categories = []
    cat_units = {}
    cat_revenue = {}
    cat_customers = {}
    regions = []
    region_orders = {}
    region_customers = {}
    region_cat_revenue = {}
    unknown = 0

    with open(sales_path, newline="", encoding="utf-8") as fh:
        for sale in csv.DictReader(fh):
            sku = sale["sku"].strip()
            product = lookup_product(products_path, sku)
            if product is None:
                unknown += 1
                continue
            category = product["category"]
            qty = int(sale["quantity"])
            revenue = line_revenue(qty, product["unit_price"], sale["discount_pct"] or "0")
            customer = sale["customer"]
            region = sale["region"]

            if category not in categories:
                categories.append(category)
                cat_units[category] = 0
                cat_revenue[category] = Decimal(0)
                cat_customers[category] = []
            cat_units[category] += qty
            cat_revenue[category] += revenue
            if customer not in cat_customers[category]:
                cat_customers[category].append(customer)

            if region not in regions:
                regions.append(region)
                region_orders[region] = []
                region_customers[region] = []
                region_cat_revenue[region] = {}
            if sale["order_id"] not in region_orders[region]:
                region_orders[region].append(sale["order_id"])
            if customer not in region_customers[region]:
                region_customers[region].append(customer)
            region_cat_revenue[region][category] = (
                region_cat_revenue[region].get(category, Decimal(0)) + revenue)

    report = "CATEGORY SUMMARY\n"
    for category in sorted(categories):
        report += "%s\t%d\t%s\t%d\n" % (category, cat_units[category], cat_revenue[category],
                                        len(cat_customers[category]))
    report += "REGION SUMMARY\n"
    for region in sorted(regions):
        per_cat = region_cat_revenue[region]
        # highest revenue wins; ties go to the alphabetically first category
        top = sorted(per_cat.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
        report += "%s\t%d\t%d\t%s\n" % (region, len(region_orders[region]),
                                        len(region_customers[region]), top)
    report += "UNKNOWN SKUS\t%d\n" % unknown
    return report


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
