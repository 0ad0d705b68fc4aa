#!/bin/bash
set -e
cat > /app/reconcile.py <<'PY'
import csv
import io
import re
import sys
from datetime import date
from decimal import Decimal

REF_RE = re.compile(r"\b[A-Z]{2,4}-\d{3,6}\b")


def fmt(cents):
    sign = "-" if cents < 0 else ""
    return "%s%d.%02d" % (sign, abs(cents) // 100, abs(cents) % 100)


def parse_bank(text):
    rows = list(csv.reader(io.StringIO(text, newline="")))
    out = []
    for n, row in enumerate(rows[1:], start=1):
        d, desc, amount, ref = row
        dd, mm, yy = d.strip().split("/")
        cents = int(Decimal(amount.strip().replace(",", "")) * 100)
        ref = ref.strip().upper()
        if not ref:
            m = REF_RE.search(desc)
            ref = m.group(0) if m else ""
        out.append({"line": n, "date": date(int(yy), int(mm), int(dd)), "cents": cents, "ref": ref})
    return out


def parse_ledger(text):
    out = []
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        eid, d, ref, _cp, cents = [f.strip() for f in line.split("|")]
        y, m, dd = d.split("-")
        out.append({"pos": len(out), "id": eid, "date": date(int(y), int(m), int(dd)),
                    "cents": int(cents), "ref": ref.upper()})
    return out


def reconcile(bank_text, ledger_text):
    bank = parse_bank(bank_text)
    ledger = parse_ledger(ledger_text)
    used_b, used_l = set(), set()
    amount_mm, date_mm, inferred = [], [], []
    ok = 0
    refs = {b["ref"] for b in bank if b["ref"]} & {l["ref"] for l in ledger if l["ref"]}
    for r in refs:
        bs = sorted((b for b in bank if b["ref"] == r), key=lambda b: (b["date"], b["line"]))
        ls = sorted((l for l in ledger if l["ref"] == r), key=lambda l: (l["date"], l["pos"]))
        for b, l in zip(bs, ls):
            used_b.add(b["line"])
            used_l.add(l["pos"])
            if b["cents"] != l["cents"]:
                amount_mm.append((b["line"], "AMOUNT_MISMATCH %s bank=%s ledger=%s bank_line=%d ledger_id=%s" % (
                    r, fmt(b["cents"]), fmt(l["cents"]), b["line"], l["id"])))
            elif abs((b["date"] - l["date"]).days) > 3:
                date_mm.append((b["line"], "DATE_MISMATCH %s bank=%s ledger=%s bank_line=%d ledger_id=%s" % (
                    r, b["date"].isoformat(), l["date"].isoformat(), b["line"], l["id"])))
            else:
                ok += 1
    for b in bank:
        if b["line"] in used_b:
            continue
        best = None
        for l in ledger:
            if l["pos"] in used_l or l["cents"] != b["cents"]:
                continue
            diff = abs((b["date"] - l["date"]).days)
            if diff > 3:
                continue
            key = (diff, l["pos"])
            if best is None or key < best[0]:
                best = (key, l)
        if best is not None:
            l = best[1]
            used_b.add(b["line"])
            used_l.add(l["pos"])
            inferred.append((b["line"], "INFERRED bank_line=%d ledger_id=%s amount=%s" % (
                b["line"], l["id"], fmt(b["cents"]))))
    out = [s for _, s in sorted(amount_mm)] + [s for _, s in sorted(date_mm)] + [s for _, s in sorted(inferred)]
    miss_l = [b for b in bank if b["line"] not in used_b]
    miss_b = [l for l in ledger if l["pos"] not in used_l]
    for b in miss_l:
        out.append("MISSING_IN_LEDGER bank_line=%d date=%s amount=%s ref=%s" % (
            b["line"], b["date"].isoformat(), fmt(b["cents"]), b["ref"] or "-"))
    for l in miss_b:
        out.append("MISSING_IN_BANK ledger_id=%s date=%s amount=%s ref=%s" % (
            l["id"], l["date"].isoformat(), fmt(l["cents"]), l["ref"] or "-"))
    out.append("SUMMARY ok=%d inferred=%d amount_mismatch=%d date_mismatch=%d missing_in_ledger=%d missing_in_bank=%d" % (
        ok, len(inferred), len(amount_mm), len(date_mm), len(miss_l), len(miss_b)))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8", newline="") as fh:
        bank_text = fh.read()
    with open(sys.argv[2], encoding="utf-8", newline="") as fh:
        ledger_text = fh.read()
    sys.stdout.write(reconcile(bank_text, ledger_text))
PY
python3 /app/reconcile.py /app/data/bank_2024Q1.csv /app/data/ledger_2024Q1.txt > /app/reconciliation.txt
