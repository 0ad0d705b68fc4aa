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


if False:
    with open(sys.argv[1], encoding="utf-8") as fh:
        text = fh.read()
    with open(sys.argv[2], "w", encoding="utf-8", newline="") as fh:
        fh.write(flatten(text))


import json, random
CITIES = ["Berlin", "São Paulo", "Zürich", "New\tYork", "Oslo", "Kraków", "Lyon\n(FR)", "東京", ""]
NAMES = ["Acme GmbH", "Jane \"JJ\" Doe", "Bob\tSmith", "Łukasz", "Café Noir", "  spaced  ", "O'Hara"]
def gen_jsonl(rng, n):
    lines = []
    for i in range(n):
        r = rng.random()
        if r < 0.04:
            lines.append(rng.choice(["", "   ", "{not json", "[1, 2, 3]", "42", '"str"', "null", '{"id": "X", "items": [}']))
            continue
        rec = {}
        if rng.random() < 0.95:
            rec["id"] = rng.choice(["ORD-%05d" % rng.randrange(10**5), rng.randrange(10**6)])
        cust = {}
        if rng.random() < 0.9: cust["name"] = rng.choice(NAMES)
        if rng.random() < 0.85:
            addr = {}
            if rng.random() < 0.9: addr["city"] = rng.choice(CITIES)
            if rng.random() < 0.9: addr["country"] = rng.choice(["DE", "BR", "CH", "US", "NO", "PL", "FR", "JP", None])
            cust["address"] = addr
        elif rng.random() < 0.5:
            cust["address"] = None
        if rng.random() < 0.93: rec["customer"] = cust
        elif rng.random() < 0.5: rec["customer"] = None
        k = rng.choice([0, 1, 1, 2, 3, 5])
        if k or rng.random() < 0.5:
            items = []
            for _ in range(k):
                it = {"qty": rng.randrange(0, 50)}
                if rng.random() < 0.95: it["sku"] = rng.choice(["SKU-%d" % rng.randrange(1000), "A\tB", "x"])
                cents = rng.randrange(0, 100000)
                form = rng.random()
                if form < 0.3: it["unit_price"] = "%d.%02d" % divmod(cents, 100)
                elif form < 0.45: it["unit_price"] = "%d.%03d" % (cents // 100, rng.randrange(1000))
                elif form < 0.6: it["unit_price"] = rng.randrange(0, 500)
                elif form < 0.75: it["unit_price"] = " %d.%d " % (rng.randrange(100), rng.randrange(10))
                else: it["unit_price"] = None  # placeholder -> float literal below
                items.append(it)
            rec["items"] = items
        if rng.random() < 0.7:
            rec["tags"] = [rng.choice(["vip", "gift", "b2b", "rush", "Gift", "re\nturn"]) for _ in range(rng.randrange(0, 4))]
        elif rng.random() < 0.3:
            rec["tags"] = None
        if rng.random() < 0.5:
            rec["shipping"] = {"method": "dhl", "cost": 4.99}
        s = json.dumps(rec, ensure_ascii=rng.random() < 0.5)
        # float literals that are not exactly representable in binary
        while '"unit_price": null' in s:
            s = s.replace('"unit_price": null', '"unit_price": %d.%s' % (rng.randrange(100), rng.choice(["005", "015", "125", "1", "35", "675", "995"])), 1)
        lines.append(s)
    return "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")


# ------------------------------------------------------------------ tests
import subprocess

import pytest


def run(tmp_path, text):
    inp = tmp_path / "in.jsonl"
    out = tmp_path / "out.tsv"
    inp.write_bytes(text.encode("utf-8"))
    p = subprocess.run(["/usr/bin/python3", "/app/flatten.py", str(inp), str(out)],
                       capture_output=True, timeout=60, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-2000:]
    return out.read_bytes().decode("utf-8")


def test_sample_file_output():
    with open("/app/orders.tsv", "rb") as fh:
        got = fh.read().decode("utf-8")
    assert got == flatten(gen_jsonl(random.Random(8), 120))


@pytest.mark.parametrize("seed", range(6))
def test_random_exports(tmp_path, seed):
    rng = random.Random(900 + seed)
    text = gen_jsonl(rng, rng.randrange(20, 400))
    assert run(tmp_path, text) == flatten(text)


def test_decimal_rounding_and_edge_records(tmp_path):
    lines = [
        '{"id": "A", "items": [{"sku": "p", "qty": 3, "unit_price": 0.005}]}',
        '{"id": "B", "items": [{"sku": "q", "qty": 1, "unit_price": "2.675"}, {"sku": "r", "qty": 7, "unit_price": 1.115}]}',
        '{"id": "C", "items": []}',
        '{"id": "D"}',
        'not json at all',
        '{"id": "E", "customer": {"name": "T\\tab", "address": null}, "tags": ["b", "a", "b"], "items": [{"qty": 0, "unit_price": 10}]}',
        '',
        '["array"]',
    ]
    text = "\n".join(lines)
    got = run(tmp_path, text)
    assert got == flatten(text)
    assert got.splitlines()[1:] == [
        "A\t\t\t\tp\t3\t0.01\t0.02\t",
        "B\t\t\t\tq\t1\t2.68\t2.68\t",
        "B\t\t\t\tr\t7\t1.12\t7.81\t",
        "C\t\t\t\t\t\t\t\t",
        "D\t\t\t\t\t\t\t\t",
        "E\tT ab\t\t\t\t0\t10.00\t0.00\ta|b",
    ]
