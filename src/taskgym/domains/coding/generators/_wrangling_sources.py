"""Python sources shared by the ``wrangling`` generator and its oracle.

``PARSERS[kind]`` defines ``load(text)``: it turns the messy file into clean records following the
rules stated in instruction.md. ``ANSWERS[question]`` defines ``answer(records, **params)``. The
generator execs both (checking that ``load`` recovers exactly the records it rendered) and the
oracle solve.sh embeds the very same text.
"""

from __future__ import annotations

from ._common import dedent

_PRELUDE = dedent('''
    import csv
    import io
    import json
    import re


    def fmt_cents(cents):
        sign = "-" if cents < 0 else ""
        return f"{sign}{abs(cents) // 100}.{abs(cents) % 100:02d}"


    def ranked(totals, k=None):
        order = sorted(totals.items(), key=lambda kv: (-kv[1], kv[0]))
        return order if k is None else order[:k]

    ''')

PARSERS: dict[str, str] = {
    "transactions": _PRELUDE + dedent('''
        def load(text):
            seen, out = set(), []
            for row in csv.DictReader(io.StringIO(text)):
                tid = row["txn_id"].strip()
                if tid in seen:
                    continue
                seen.add(tid)
                amount = row["amount"].strip().replace("$", "").replace(",", "")
                if not amount:
                    continue
                whole, _, frac = amount.partition(".")
                date = row["date"].strip()
                if "/" in date:
                    day, month, year = date.split("/")
                    date = f"{year}-{month}-{day}"
                out.append({
                    "txn_id": tid,
                    "date": date,
                    "customer": row["customer"].strip().lower(),
                    "category": row["category"].strip().lower(),
                    "amount": int(whole) * 100 + int((frac + "00")[:2]),
                    "status": row["status"].strip().lower(),
                })
            return sorted(out, key=lambda r: r["txn_id"])

        '''),
    "events": _PRELUDE + dedent('''
        def load(text):
            out = {}
            for line in text.splitlines():
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if obj["event_id"] in out:
                    continue
                ts = obj["ts"].replace("+00:00", "").rstrip("Z").split(".")[0]
                rec = {
                    "event_id": obj["event_id"],
                    "ts": ts,
                    "user": obj["user"].strip().lower(),
                    "type": obj["type"].strip().lower(),
                }
                if rec["type"] == "purchase":
                    rec["value"] = round(float(obj["value"]) * 100)
                out[rec["event_id"]] = rec
            return [out[k] for k in sorted(out)]

        '''),
    "log": _PRELUDE + dedent(r'''
        LINE = re.compile(
            r'^(\S+) - - \[\d\d/\w{3}/\d{4}:(\d\d):\d\d:\d\d \+0000\] '
            r'"[A-Z]+ (\S+) HTTP/1\.1" (\d{3}) (\d+|-) "[^"]*" "[^"]*"$'
        )


        def load(text):
            out = []
            for line in text.splitlines():
                m = LINE.match(line)
                if not m:
                    continue
                path = m.group(3).split("?")[0]
                if len(path) > 1:
                    path = path.rstrip("/")
                size = m.group(5)
                out.append({
                    "ip": m.group(1),
                    "hour": int(m.group(2)),
                    "path": path,
                    "status": int(m.group(4)),
                    "bytes": 0 if size == "-" else int(size),
                })
            return out

        '''),
}

ANSWERS: dict[str, str] = {
    "top_customers": dedent('''
        def answer(records, month, k):
            totals = {}
            for r in records:
                if r["status"] == "completed" and r["date"].startswith(month + "-"):
                    totals[r["customer"]] = totals.get(r["customer"], 0) + r["amount"]
            return [[name, fmt_cents(total)] for name, total in ranked(totals, k)]
        '''),
    "net_by_category": dedent('''
        def answer(records):
            net = {}
            for r in records:
                sign = {"completed": 1, "refunded": -1}.get(r["status"])
                if sign is not None:
                    net[r["category"]] = net.get(r["category"], 0) + sign * r["amount"]
            return [[cat, fmt_cents(total)] for cat, total in ranked(net)]
        '''),
    "monthly_status": dedent('''
        STATUSES = ("completed", "refunded", "pending")


        def answer(records):
            counts = {}
            for r in records:
                row = counts.setdefault(r["date"][:7], dict.fromkeys(STATUSES, 0))
                row[r["status"]] += 1
            return [[m, counts[m]["completed"], counts[m]["refunded"], counts[m]["pending"]]
                    for m in sorted(counts)]
        '''),
    "daily_active": dedent('''
        def answer(records, dates):
            users = {d: set() for d in dates}
            for r in records:
                if r["ts"][:10] in users:
                    users[r["ts"][:10]].add(r["user"])
            return [[d, len(users[d])] for d in dates]
        '''),
    "purchase_summary": dedent('''
        def answer(records):
            count, total = {}, {}
            for r in records:
                if r["type"] == "purchase":
                    count[r["user"]] = count.get(r["user"], 0) + 1
                    total[r["user"]] = total.get(r["user"], 0) + r["value"]
            return [{"user": u, "purchases": count[u], "total": fmt_cents(t)}
                    for u, t in ranked(total)]
        '''),
    "first_purchase": dedent('''
        def answer(records):
            first = {}
            for r in records:
                if r["type"] == "purchase":
                    first[r["user"]] = min(first.get(r["user"], r["ts"]), r["ts"])
            order = sorted(first.items(), key=lambda kv: (kv[1], kv[0]))
            return [{"user": u, "first_purchase": ts + "Z"} for u, ts in order]
        '''),
    "error_paths": dedent('''
        def answer(records, k):
            errors = {}
            for r in records:
                if 500 <= r["status"] <= 599:
                    errors[r["path"]] = errors.get(r["path"], 0) + 1
            return [[p, n] for p, n in ranked(errors, k)]
        '''),
    "bytes_per_ip": dedent('''
        def answer(records, k):
            sent = {}
            for r in records:
                if 200 <= r["status"] <= 299:
                    sent[r["ip"]] = sent.get(r["ip"], 0) + r["bytes"]
            return [[ip, n] for ip, n in ranked(sent, k)]
        '''),
    "hourly": dedent('''
        def answer(records):
            rows = [[f"{h:02d}", 0, 0] for h in range(24)]
            for r in records:
                rows[r["hour"]][1] += 1
                rows[r["hour"]][2] += r["status"] >= 400
            return rows
        '''),
}
