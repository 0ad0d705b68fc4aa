#!/bin/bash
set -e
mkdir -p /app/out
cat > /app/merge.py <<'PY'
import csv
from datetime import date
from decimal import Decimal

with open("/app/data/customers.csv", encoding="cp1252", newline="") as fh:
    rows = list(csv.reader(fh, delimiter=";"))
best = {}
for idx, (cid, name, email, country, updated) in enumerate(rows[1:]):
    d, m, y = map(int, updated.strip().split("."))
    key = (date(y, m, d), idx)
    cid = int(cid)
    if cid not in best or key > best[cid][0]:
        best[cid] = (key, " ".join(name.split()), email.strip().lower(), country.strip().upper())

by_email = {v[2]: cid for cid, v in best.items()}
counts = {cid: 0 for cid in best}
totals = {cid: Decimal("0") for cid in best}
unmatched = set()
seen = set()
with open("/app/data/orders.csv", encoding="utf-8-sig", newline="") as fh:
    for row in csv.DictReader(fh):
        oid = row["order_id"].strip()
        if oid in seen:
            continue
        seen.add(oid)
        if row["status"].strip().lower() not in ("paid", "shipped"):
            continue
        email = row["customer_email"].strip().lower()
        amount = Decimal(row["amount_eur"].strip().replace(",", ""))
        cid = by_email.get(email)
        if cid is None:
            unmatched.add(oid)
            continue
        counts[cid] += 1
        totals[cid] += amount

with open("/app/out/customers_normalized.csv", "w", encoding="utf-8", newline="") as fh:
    w = csv.writer(fh, lineterminator="\n")
    w.writerow(["customer_id", "name", "email", "country", "order_count", "total_eur"])
    for cid in sorted(best):
        _, name, email, country = best[cid]
        w.writerow([cid, name, email, country, counts[cid], "%.2f" % totals[cid]])
with open("/app/out/unmatched_orders.txt", "w", encoding="utf-8") as fh:
    fh.write("".join(o + "\n" for o in sorted(unmatched)))
PY
python3 /app/merge.py
