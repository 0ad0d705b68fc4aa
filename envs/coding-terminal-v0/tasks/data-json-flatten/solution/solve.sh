#!/bin/bash
set -e
cat > /app/flatten.py <<'PY'
import json
import sys
from decimal import Decimal, ROUND_HALF_UP

CENT = Decimal("0.01")
HEADER = ["order_id", "customer", "city", "country", "sku", "qty", "unit_price", "line_total", "tags"]


def clean(v):
    if v is None:
        return ""
    if not isinstance(v, str):
        v = str(v)
    return v.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def get(d, *path):
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def money(x):
    return str(x.quantize(CENT, rounding=ROUND_HALF_UP))


def flatten(text):
    out = ["\t".join(HEADER)]
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            rec = json.loads(line, parse_float=Decimal)
        except ValueError:
            continue
        if not isinstance(rec, dict):
            continue
        base = [clean(rec.get("id")), clean(get(rec, "customer", "name")),
                clean(get(rec, "customer", "address", "city")),
                clean(get(rec, "customer", "address", "country"))]
        tags = rec.get("tags")
        tags = "|".join(sorted({clean(t) for t in tags})) if isinstance(tags, list) else ""
        items = rec.get("items")
        if not isinstance(items, list) or not items:
            out.append("\t".join(base + ["", "", "", "", tags]))
            continue
        for it in items:
            price = Decimal(str(it["unit_price"]).strip()) if not isinstance(it["unit_price"], Decimal) else it["unit_price"]
            qty = it["qty"]
            out.append("\t".join(base + [clean(it.get("sku")), str(qty), money(price), money(price * qty), tags]))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        text = fh.read()
    with open(sys.argv[2], "w", encoding="utf-8", newline="") as fh:
        fh.write(flatten(text))
PY
python3 /app/flatten.py /app/data/orders.jsonl /app/orders.tsv
