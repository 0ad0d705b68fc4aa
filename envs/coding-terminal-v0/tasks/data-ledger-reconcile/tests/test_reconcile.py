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


import csv
import io
import random
from datetime import date, timedelta

PARTIES = ["Acme Corp", "Globex", "Initech", "Umbrella plc", "Stark Industries", "Wayne Ent.", "Hooli"]


def gen_pair(rng, n):
    ledger = []
    bank = []
    start = date(2024, 1, 1)
    prefixes = ["INV", "PO", "REF", "SAL", "TX"]
    refs = ["%s-%0*d" % (rng.choice(prefixes), rng.choice([3, 4, 5, 6]), rng.randrange(1000)) for _ in range(n)]
    for i in range(n):
        ref = rng.choice(refs) if rng.random() < 0.15 else refs[i]
        if rng.random() < 0.1:
            ref = ""
        d = start + timedelta(days=rng.randrange(0, 120))
        cents = rng.choice([-1, 1, 1]) * rng.randrange(1, 500000)
        if rng.random() < 0.1:
            cents = rng.choice([10000, -10000, 250000, 99])
        eid = "L%05d" % (i + 1)
        ledger.append([eid, d, ref, rng.choice(PARTIES), cents])
        r = rng.random()
        if r < 0.08:
            continue  # missing in bank
        bd, bc, bref = d, cents, ref
        if r < 0.16:
            bc = cents + rng.choice([-1, 1, 100, -2500, 10])
        elif r < 0.24:
            bd = d + timedelta(days=rng.choice([-9, -5, -4, 4, 6, 15]))
        elif r < 0.5:
            bd = d + timedelta(days=rng.randrange(-3, 4))
        desc = "%s %s" % (rng.choice(["PAYMENT", "TRANSFER", "SEPA CT", "CARD"]), rng.choice(PARTIES).upper())
        mode = rng.random()
        if bref and mode < 0.25:
            desc += " " + bref  # reference only in the description
            bref = ""
        elif bref and mode < 0.35:
            bref = ""  # reference lost entirely
        elif bref and mode < 0.5:
            bref = rng.choice([bref.lower(), " " + bref + " "])
        bank.append([bd, desc, bc, bref])
        if rng.random() < 0.04:
            bank.append([bd + timedelta(days=rng.randrange(0, 3)), desc, bc, bref])  # double booking
    for _ in range(max(1, n // 15)):
        d = start + timedelta(days=rng.randrange(0, 120))
        bank.append([d, "FEE " + rng.choice(["MONTHLY", "SWIFT MT-103"]) + " ref XX-12", -rng.randrange(100, 5000),
                     rng.choice(["", "", "FEE-%03d" % rng.randrange(1000)])])
    rng.shuffle(bank)
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["date", "description", "amount", "reference"])
    for d, desc, c, ref in bank:
        s = "%s%d.%02d" % ("-" if c < 0 else "", abs(c) // 100, abs(c) % 100)
        if abs(c) >= 100000 and rng.random() < 0.6:
            s = "%s{:,}.{:02d}".format(abs(c) // 100, abs(c) % 100) % ("-" if c < 0 else "")
        w.writerow([d.strftime("%d/%m/%Y"), desc, s, ref])
    bank_text = buf.getvalue()
    lines = ["# general ledger export", "# entry_id|date|reference|counterparty|amount_cents"]
    for eid, d, ref, cp, c in ledger:
        lines.append("%s|%s|%s|%s|%d" % (eid, d.isoformat(), rng.choice([ref, ref, ref.lower(), " %s " % ref]), cp, c))
        if rng.random() < 0.03:
            lines.append("")
    return bank_text, "\n".join(lines) + "\n"


# ------------------------------------------------------------------ tests
import subprocess

import pytest

EXPECTED_Q1 = 'AMOUNT_MISMATCH REF-0320 bank=-1069.68 ledger=-1044.68 bank_line=31 ledger_id=L00057\nAMOUNT_MISMATCH TX-386 bank=1814.30 ledger=645.57 bank_line=40 ledger_id=L00032\nAMOUNT_MISMATCH REF-078 bank=-1418.15 ledger=-1418.14 bank_line=55 ledger_id=L00035\nAMOUNT_MISMATCH SAL-00431 bank=2724.58 ledger=1249.41 bank_line=58 ledger_id=L00018\nAMOUNT_MISMATCH SAL-00020 bank=3273.32 ledger=3298.32 bank_line=59 ledger_id=L00048\nAMOUNT_MISMATCH PO-0650 bank=1.09 ledger=0.99 bank_line=61 ledger_id=L00007\nDATE_MISMATCH TX-00159 bank=2024-01-26 ledger=2024-01-22 bank_line=6 ledger_id=L00045\nDATE_MISMATCH INV-986 bank=2024-01-27 ledger=2024-01-12 bank_line=13 ledger_id=L00053\nDATE_MISMATCH PO-00698 bank=2024-03-06 ledger=2024-03-02 bank_line=24 ledger_id=L00021\nDATE_MISMATCH REF-00643 bank=2024-03-21 ledger=2024-03-06 bank_line=33 ledger_id=L00005\nDATE_MISMATCH TX-000659 bank=2024-01-18 ledger=2024-01-14 bank_line=53 ledger_id=L00042\nDATE_MISMATCH TX-000640 bank=2024-04-19 ledger=2024-04-13 bank_line=60 ledger_id=L00002\nINFERRED bank_line=17 ledger_id=L00017 amount=-133.53\nINFERRED bank_line=18 ledger_id=L00043 amount=2399.05\nINFERRED bank_line=20 ledger_id=L00046 amount=-1254.32\nINFERRED bank_line=32 ledger_id=L00050 amount=3310.88\nINFERRED bank_line=43 ledger_id=L00023 amount=0.99\nINFERRED bank_line=49 ledger_id=L00049 amount=2500.00\nINFERRED bank_line=56 ledger_id=L00034 amount=1296.03\nMISSING_IN_LEDGER bank_line=5 date=2024-02-11 amount=-17.95 ref=-\nMISSING_IN_LEDGER bank_line=23 date=2024-03-01 amount=-24.92 ref=-\nMISSING_IN_LEDGER bank_line=34 date=2024-02-09 amount=-100.00 ref=-\nMISSING_IN_LEDGER bank_line=38 date=2024-04-21 amount=-44.88 ref=MT-103\nMISSING_IN_LEDGER bank_line=39 date=2024-02-17 amount=-34.52 ref=-\nMISSING_IN_LEDGER bank_line=47 date=2024-03-08 amount=1249.51 ref=-\nMISSING_IN_LEDGER bank_line=52 date=2024-03-24 amount=646.57 ref=-\nMISSING_IN_BANK ledger_id=L00010 date=2024-03-20 amount=2724.58 ref=SAL-00431\nMISSING_IN_BANK ledger_id=L00027 date=2024-01-11 amount=-485.72 ref=SAL-352\nMISSING_IN_BANK ledger_id=L00038 date=2024-01-25 amount=-100.00 ref=-\nMISSING_IN_BANK ledger_id=L00058 date=2024-04-21 amount=1814.30 ref=TX-386\nSUMMARY ok=37 inferred=7 amount_mismatch=6 date_mismatch=6 missing_in_ledger=7 missing_in_bank=4\n'


def run(tmp_path, bank_text, ledger_text):
    bp, lp = tmp_path / "bank.csv", tmp_path / "ledger.txt"
    bp.write_bytes(bank_text.encode("utf-8"))
    lp.write_bytes(ledger_text.encode("utf-8"))
    p = subprocess.run(["/usr/bin/python3", "/app/reconcile.py", str(bp), str(lp)],
                       capture_output=True, timeout=60, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-2000:]
    return p.stdout.decode("utf-8")


def test_q1_report_file():
    with open("/app/reconciliation.txt", "rb") as fh:
        assert fh.read().decode("utf-8") == EXPECTED_Q1


def test_q1_script(tmp_path):
    b, l = gen_pair(random.Random(3), 60)
    assert reconcile(b, l) == EXPECTED_Q1
    assert run(tmp_path, b, l) == EXPECTED_Q1


@pytest.mark.parametrize("seed", range(6))
def test_random_statements(tmp_path, seed):
    rng = random.Random(7000 + seed)
    b, l = gen_pair(rng, rng.randrange(10, 250))
    assert run(tmp_path, b, l) == reconcile(b, l)


def test_handmade_rules(tmp_path):
    bank = ("date,description,amount,reference\n"
            "05/02/2024,PAYMENT ACME,100.00,inv-001\n"          # 1 pairs with 2nd ledger INV-001 (date order)
            "01/02/2024,PAYMENT ACME,\"1,000.00\",INV-001\n"    # 2 pairs with 1st ledger INV-001
            "10/02/2024,PAYMENT ACME,100.00,INV-001\n"          # 3 extra INV-001 -> inferred by amount
            "03/03/2024,CARD SHOP ABCDE-12 PO-123456,-5.00,\n"  # 4 ref from description: PO-123456
            "20/03/2024,TRANSFER,42.00,\n"                      # 5 two candidates: closest date wins
            "20/03/2024,TRANSFER,42.00,\n"                      # 6 takes the remaining one
            "25/03/2024,TRANSFER,42.00,\n")                     # 7 nothing left -> missing in ledger
    ledger = ("# test\n"
              "A1|2024-02-01|INV-001|Acme|100000\n"
              "A2|2024-02-09|INV-001|Acme|10000\n"
              "A3|2024-02-12|  |Acme|10000\n"
              "A4|2024-03-10|po-123456|Shop|-500\n"
              "A5|2024-03-23|X|Y|4200\n"
              "A6|2024-03-21||Y|4200\n"
              "A7|2024-03-30||Y|4200\n")
    got = run(tmp_path, bank, ledger)
    assert got == reconcile(bank, ledger)
    assert got == (
        "DATE_MISMATCH INV-001 bank=2024-02-05 ledger=2024-02-09 bank_line=1 ledger_id=A2\n"
        "DATE_MISMATCH PO-123456 bank=2024-03-03 ledger=2024-03-10 bank_line=4 ledger_id=A4\n"
        "INFERRED bank_line=3 ledger_id=A3 amount=100.00\n"
        "INFERRED bank_line=5 ledger_id=A6 amount=42.00\n"
        "INFERRED bank_line=6 ledger_id=A5 amount=42.00\n"
        "MISSING_IN_LEDGER bank_line=7 date=2024-03-25 amount=42.00 ref=-\n"
        "MISSING_IN_BANK ledger_id=A7 date=2024-03-30 amount=42.00 ref=-\n"
        "SUMMARY ok=1 inferred=3 amount_mismatch=0 date_mismatch=2 missing_in_ledger=1 missing_in_bank=1\n")
