"""Generator: answer an aggregation question about a messy generated dataset.

The dataset is a CSV of shop transactions, a JSON-lines event stream or a web server access log,
with realistic mess (mixed case, stray whitespace, two date formats, currency symbols, duplicates,
missing values, malformed lines). One of eight question templates asks for a filtered/grouped
aggregate written to an exact output format. The generator keeps the clean records it rendered,
computes the answer from them, and checks that the oracle's parser recovers exactly those records
from the messy file.
"""

from __future__ import annotations

import json
import pathlib
import random
import string
from dataclasses import dataclass

from . import _common as c
from ._wrangling_sources import ANSWERS, PARSERS

NAME = "wrangling"
DESCRIPTION = "Aggregate a messy CSV / JSON-lines / access-log dataset into an exact report."

PEOPLE = ["alice", "bruno", "chen", "dana", "emeka", "farah", "gosia", "hiro", "ines", "jonas",
          "kofi", "lena", "mateo", "nora", "omar", "priya"]
CATEGORIES = ["books", "garden", "toys", "grocery", "electronics", "sports", "music", "office"]
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
MONTH_NAMES = ["January", "February", "March", "April", "May", "June"]
PATHS = ["/", "/login", "/api/items", "/api/items/17", "/api/items/42", "/api/cart", "/checkout",
         "/search", "/static/app.js", "/static/site.css", "/api/orders", "/health"]
UAS = ["Mozilla/5.0 (X11; Linux x86_64)", "curl/8.1.2", "Mozilla/5.0 (Macintosh)", "python-httpx"]


def _mess(rng: random.Random, word: str) -> str:
    style = rng.choice(["lower", "lower", "upper", "title", "same"])
    word = {"lower": word.lower(), "upper": word.upper(), "title": word.title()}.get(style, word)
    return rng.choice(["", "", " ", "  "]) + word + rng.choice(["", "", " ", "\t"])


@dataclass
class Dataset:
    kind: str
    path: str  # relative to /app
    text: str
    records: list[dict[str, object]]
    rules: str


def _transactions(rng: random.Random) -> Dataset:
    year = rng.randint(2021, 2024)
    people = sorted(rng.sample(PEOPLE, rng.randint(6, 10)))
    cats = sorted(rng.sample(CATEGORIES, rng.randint(4, 6)))
    ids = rng.sample(range(1000, 10000), rng.randint(70, 120))
    rows: list[list[str]] = []
    records: list[dict[str, object]] = []
    for tid in ids:
        month, day = rng.randint(1, 6), rng.randint(1, 28)
        cents = rng.randint(150, rng.choice([9000, 60000, 250000])) if rng.random() > 0.06 else None
        status = rng.choices(["completed", "refunded", "pending"], [8, 2, 1])[0]
        rec: dict[str, object] = {"txn_id": f"T{tid}", "date": f"{year}-{month:02d}-{day:02d}",
                                  "customer": rng.choice(people), "category": rng.choice(cats),
                                  "amount": cents, "status": status}
        if cents is not None:
            records.append(rec)
        for _ in range(2 if rng.random() < 0.08 else 1):
            date = rec["date"] if rng.random() < 0.7 else f"{day:02d}/{month:02d}/{year}"
            amount = "" if cents is None else c.format_cents(cents)
            if cents is not None and rng.random() < 0.3:
                amount = rng.choice(["$" + amount, f"{cents / 100:,.2f}", " " + amount + " "])
            if amount.endswith("0") and rng.random() < 0.5:
                amount = amount[:-1]
            rows.append([f"T{tid}", str(date), _mess(rng, str(rec["customer"])),
                         _mess(rng, str(rec["category"])), amount, _mess(rng, status)])
    rng.shuffle(rows)
    lines = ["txn_id,date,customer,category,amount,status"]
    for row in rows:
        lines.append(",".join(f'"{v}"' if "," in v else v for v in row))
    rules = c.dedent("""
        `/app/data/transactions.csv` is an export from the shop's order system (header line first,
        standard CSV quoting). Known quirks of the export:
        - `customer`, `category` and `status` come in random letter case with stray spaces or
          tabs around them; compare them case-insensitively after trimming, and write them in
          lower case.
        - `date` is either `YYYY-MM-DD` or `DD/MM/YYYY`.
        - `amount` is in the shop's currency with up to two decimals, sometimes with a `$`
          prefix, a thousands separator (`1,234.50`) or surrounding spaces. A row with an empty
          amount is incomplete: ignore it entirely.
        - The export sometimes repeats a transaction: rows with the same `txn_id` are the same
          transaction and count once.
        - `status` is `completed`, `refunded` or `pending`.
        """)
    return Dataset("transactions", "data/transactions.csv", "\n".join(lines) + "\n", records, rules)


def _events(rng: random.Random) -> Dataset:
    year, month = rng.randint(2021, 2024), rng.randint(1, 12)
    people = sorted(rng.sample(PEOPLE, rng.randint(6, 10)))
    ids = rng.sample(range(10000, 100000), rng.randint(90, 150))
    lines: list[str] = []
    records: list[dict[str, object]] = []
    for eid in ids:
        day, secs = rng.randint(1, 10), rng.randrange(86400)
        hms = f"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
        ts = f"{year}-{month:02d}-{day:02d}T{hms}"
        etype = rng.choices(["login", "view", "purchase", "logout"], [3, 6, 2, 2])[0]
        rec: dict[str, object] = {"event_id": f"ev{eid}", "ts": ts, "user": rng.choice(people),
                                  "type": etype}
        if etype == "purchase":
            rec["value"] = rng.randint(99, 25000)
        records.append(rec)
        for _ in range(2 if rng.random() < 0.07 else 1):
            suffix = rng.choice(["Z", "Z", "+00:00", f".{rng.randrange(1000):03d}Z"])
            obj: dict[str, object] = {"event_id": rec["event_id"], "ts": ts + suffix,
                                      "user": _mess(rng, str(rec["user"])),
                                      "type": _mess(rng, etype)}
            text = json.dumps(obj)
            if "value" in rec:
                amount = c.format_cents(int(str(rec["value"])))
                shown = f'"{amount}"' if rng.random() < 0.4 else amount
                text = text[:-1] + f', "value": {shown}}}'
            lines.append(text)
            if rng.random() < 0.04:
                lines.append(rng.choice(["", text[: rng.randint(5, len(text) - 2)]]))
    rng.shuffle(lines)
    rules = c.dedent("""
        `/app/data/events.jsonl` holds one JSON object per line (keys `event_id`, `ts`, `user`,
        `type`, and `value` for purchases). Known quirks of the collector:
        - Some lines are blank or truncated (not valid JSON): skip them.
        - An event may be delivered more than once: objects with the same `event_id` are one
          event.
        - `user` and `type` come in random letter case with stray whitespace; compare them
          case-insensitively after trimming, and write them in lower case.
        - `ts` is UTC in ISO 8601, ending in `Z` or `+00:00`, sometimes with milliseconds.
        - `type` is one of `login`, `view`, `purchase`, `logout`; the `value` of a purchase is
          an amount with two decimals, given either as a JSON number or as a string.
        """)
    return Dataset("events", "data/events.jsonl", "\n".join(lines) + "\n", records, rules)


def _access_log(rng: random.Random) -> Dataset:
    year, month, day = rng.randint(2021, 2024), rng.randint(1, 12), rng.randint(1, 28)
    ips = sorted({f"10.{rng.randint(0, 3)}.{rng.randint(0, 9)}.{rng.randint(2, 99)}"
                  for _ in range(rng.randint(6, 12))})
    statuses = [200, 200, 200, 200, 201, 204, 301, 304, 400, 404, 404, 500, 502, 503]
    lines: list[str] = []
    records: list[dict[str, object]] = []
    for secs in sorted(rng.randrange(86400) for _ in range(rng.randint(150, 260))):
        path, status = rng.choice(PATHS), rng.choice(statuses)
        size = 0 if status in (204, 304) else rng.randint(120, 90000)
        method = "POST" if path in ("/login", "/api/cart", "/checkout") else "GET"
        ip = rng.choice(ips)
        records.append({"ip": ip, "hour": secs // 3600, "path": path, "status": status,
                        "bytes": size})
        shown = path
        if path != "/" and rng.random() < 0.15:
            shown += "/"
        if rng.random() < 0.25:
            shown += f"?{rng.choice(['q', 'page', 'ref'])}={rng.randint(1, 99)}"
        stamp = (f"{day:02d}/{MONTHS[month - 1]}/{year}:{secs // 3600:02d}:"
                 f"{secs // 60 % 60:02d}:{secs % 60:02d} +0000")
        lines.append(f'{ip} - - [{stamp}] "{method} {shown} HTTP/1.1" {status} '
                     f'{size if size else "-"} "-" "{rng.choice(UAS)}"')
        if rng.random() < 0.03:
            lines.append(rng.choice(["", "-", lines[-1][: rng.randint(10, 40)]]))
    rules = c.dedent(f"""
        `/app/data/access.log` is one day ({year}-{month:02d}-{day:02d}, UTC) of a web server's
        access log in the usual combined format:
        `IP - - [DD/Mon/YYYY:HH:MM:SS +0000] "METHOD TARGET HTTP/1.1" STATUS BYTES "REFERER" "UA"`.
        Known quirks:
        - A few lines are garbage or cut off (they do not match the format): skip them.
        - The path of a request is its TARGET without the query string (`?...`); a trailing `/`
          is not significant (`/api/cart/` is `/api/cart`), except for the root path `/`.
        - BYTES is `-` when no body was sent; count it as 0.
        """)
    return Dataset("log", "data/access.log", "\n".join(lines) + "\n", records, rules)


@dataclass
class Question:
    kind: str
    answer: str  # key into ANSWERS
    text: str
    output: str  # relative to /app
    params: dict[str, object]
    header: str | None  # CSV header, None for JSON output


def _question(rng: random.Random, ds: Dataset) -> Question:
    recs = ds.records
    if ds.kind == "transactions":
        choice = rng.choice(["top_customers", "net_by_category", "monthly_status"])
        if choice == "top_customers":
            month, k = rng.randint(1, 6), rng.randint(3, 6)
            year = str(recs[0]["date"])[:4]
            text = (f"For {MONTH_NAMES[month - 1]} {year}, compute the total amount of "
                    f"**completed** transactions per customer (refunded and pending ones do not "
                    f"count) and report the top {k} customers by total, highest first; ties by "
                    f"customer name ascending. Fewer rows if fewer customers qualify.")
            params: dict[str, object] = {"month": f"{year}-{month:02d}", "k": k}
            return Question(ds.kind, choice, text, "answer.csv", params, "customer,total")
        if choice == "net_by_category":
            text = ("For each category, compute the net revenue over the whole file: the sum of "
                    "completed amounts minus the sum of refunded amounts (pending ones are "
                    "ignored). List every category with at least one completed or refunded "
                    "transaction, by net descending, ties by category ascending.")
            return Question(ds.kind, choice, text, "answer.csv", {}, "category,net")
        text = ("For each calendar month (`YYYY-MM`) that has at least one transaction, count "
                "the transactions of each status. One row per month, ascending.")
        return Question(ds.kind, choice, text, "answer.csv", {},
                        "month,completed,refunded,pending")
    if ds.kind == "events":
        choice = rng.choice(["daily_active", "purchase_summary", "first_purchase"])
        ym = str(recs[0]["ts"])[:7]
        if choice == "daily_active":
            first = rng.randint(1, 4)
            last = first + rng.randint(3, 8)
            text = (f"For every date from {ym}-{first:02d} to {ym}-{last:02d} inclusive (UTC), "
                    f"count the distinct users with at least one event of any type that day. "
                    f"One row per date, ascending, including dates with 0 users.")
            params = {"dates": [f"{ym}-{d:02d}" for d in range(first, last + 1)]}
            return Question(ds.kind, choice, text, "answer.csv", params, "date,active_users")
        if choice == "purchase_summary":
            text = ("Summarise purchases per user: for every user with at least one purchase, "
                    "the number of purchases and their total value. Write a JSON array of "
                    'objects `{"user": str, "purchases": int, "total": str}`, where `total` has '
                    'exactly two decimals (e.g. `"1234.50"`), ordered by total descending, ties '
                    "by user ascending.")
            return Question(ds.kind, choice, text, "answer.json", {}, None)
        text = ("For every user with at least one purchase, find the time of their first "
                "purchase. Write a JSON array of objects `{\"user\": str, \"first_purchase\": "
                "str}` with the time as `YYYY-MM-DDTHH:MM:SSZ` (whole seconds, milliseconds "
                "dropped), ordered by that time ascending, ties by user ascending.")
        return Question(ds.kind, choice, text, "answer.json", {}, None)
    choice = rng.choice(["error_paths", "bytes_per_ip", "hourly"])
    if choice == "error_paths":
        k = rng.randint(3, 6)
        text = (f"Report the top {k} paths by number of server errors (STATUS 500-599), highest "
                f"first, ties by path ascending; only paths with at least one server error.")
        return Question(ds.kind, choice, text, "answer.csv", {"k": k}, "path,errors")
    if choice == "bytes_per_ip":
        k = rng.randint(3, 6)
        text = (f"Report the top {k} client IPs by total BYTES of successful responses (STATUS "
                f"200-299), highest first, ties by IP (as a string) ascending; only IPs with at "
                f"least one successful response.")
        return Question(ds.kind, choice, text, "answer.csv", {"k": k}, "ip,bytes")
    text = ("For each hour of the day (`00` to `23`, all 24 rows, ascending), count all "
            "requests and the requests with STATUS 400 or higher.")
    return Question(ds.kind, choice, text, "answer.csv", {}, "hour,requests,errors")


def _tests(q: Question, expected: object) -> str:
    if q.header is not None:
        assert isinstance(expected, list)
        lines = [q.header] + [",".join(str(v) for v in row) for row in expected]
        return c.dedent(f'''
            """Hidden tests: the report must match the expected answer exactly."""

            import pathlib

            OUT = pathlib.Path("/app/{q.output}")
            EXPECTED = {c.py_literal(lines)}


            def _lines():
                text = OUT.read_text(encoding="utf-8").replace("\\r\\n", "\\n")
                return text[:-1].split("\\n") if text.endswith("\\n") else text.split("\\n")


            def test_output_exists():
                assert OUT.is_file()


            def test_header():
                assert _lines()[0] == EXPECTED[0]


            def test_row_count():
                assert len(_lines()) == len(EXPECTED)


            def test_rows_exact():
                assert _lines() == EXPECTED
            ''')
    return c.dedent(f'''
        """Hidden tests: the JSON report must match the expected answer exactly."""

        import json
        import pathlib

        OUT = pathlib.Path("/app/{q.output}")
        EXPECTED = json.loads({c.py_literal(json.dumps(expected))})


        def _load():
            return json.loads(OUT.read_text(encoding="utf-8"))


        def test_output_exists():
            assert OUT.is_file()


        def test_is_array():
            assert type(_load()) is list


        def test_length():
            assert len(_load()) == len(EXPECTED)


        def test_content_exact():
            assert json.dumps(_load(), sort_keys=True) == json.dumps(EXPECTED, sort_keys=True)
        ''')


def generate(seed: int, dest: pathlib.Path) -> None:
    """Write one complete wrangling task folder into ``dest``."""
    rng = random.Random(seed)
    maker = rng.choice([_transactions, _events, _access_log])
    ds = maker(rng)
    q = _question(rng, ds)
    ns: dict[str, object] = {}
    exec(PARSERS[ds.kind] + ANSWERS[q.answer], ns)
    parsed = c.get_callable(ns, "load")(ds.text)
    key = {"transactions": "txn_id", "events": "event_id"}.get(ds.kind)
    clean = sorted(ds.records, key=lambda r: str(r[key])) if key else ds.records
    if parsed != clean:  # the oracle's reading of the messy file must equal the clean data
        raise RuntimeError(f"{NAME}: parser disagrees with the generated records (seed {seed})")
    expected = c.get_callable(ns, "answer")(clean, **q.params)

    if q.header is not None:
        fmt = (f"Write `/app/{q.output}`: UTF-8 CSV with `\\n` line endings, the header line "
               f"`{q.header}` first, then one row per result, no quoting, no extra columns or "
               f"spaces.")
        if q.answer in ("top_customers", "net_by_category"):
            fmt += " Amounts are written with exactly two decimals (`1234.50`, `-12.05`)."
    else:
        fmt = (f"Write `/app/{q.output}` (UTF-8); any JSON formatting/whitespace is fine, but "
               f"values, key names and order of the array must be exact.")
    instruction = (c.dedent("""
        # Data request

        Finance/ops asked for a number we cannot get from the dashboards, so it has to come
        straight from the raw data.

        """) + ds.rules + "\n**Question.** " + q.text + "\n\n**Output.** " + fmt + "\n\n"
        "Use whatever you like to compute it (Python 3 standard library is available; no "
        "network, no third-party packages). Only the output file is graded; do not modify "
        "the data file.\n")
    oracle_py = (PARSERS[ds.kind] + ANSWERS[q.answer] + string.Template(c.dedent("""

        result = answer(load(open("/app/$path", encoding="utf-8").read()), **$params)
        with open("/app/$out", "w", encoding="utf-8") as fh:
            if $csv:
                fh.write("$header\\n")
                fh.writelines(",".join(str(v) for v in row) + "\\n" for row in result)
            else:
                json.dump(result, fh, indent=2)
        """)).substitute(path=ds.path, params=repr(q.params), out=q.output,
                         csv=q.header is not None, header=q.header or ""))
    marker = "PY_EOF"
    solve = c.solve_script(f"/usr/bin/python3 - <<'{marker}'\n{oracle_py}{marker}\n")
    toml = c.task_toml(difficulty="medium", category="data",
                       tags=["python", "data-wrangling", ds.kind], expected_tests=4)
    c.write_task(dest, instruction=instruction, toml=toml, start_files={ds.path: ds.text},
                 solve_sh=solve, tests={"test_answer.py": _tests(q, expected)})
