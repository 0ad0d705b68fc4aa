import datetime
import gzip
import json
import math
import random
import re
import subprocess

import pytest

TOOL = "/app/logsum.py"

SAMPLE = """2024-03-05T12:00:01Z GET /api/users/42?expand=1 200 35ms 512
2024-03-05T12:00:02Z POST /api/orders 201 120ms 80
2024-03-05T12:00:02Z GET /health 200 1ms 2
this line is garbage
2024-03-05T12:00:03Z GET /api/users/7 404 12ms 0
2024-03-05T12:00:09Z GET /api/users/42/orders 500 900ms 13
"""

MALFORMED = [
    "garbage", "2024-03-05T12:00:01Z GET /a 200 35ms", "2024-03-05T12:00:01Z GET /a 200 35ms 5 extra",
    "2024-02-30T12:00:01Z GET /a 200 35ms 5", "2024-03-05T25:00:01Z GET /a 200 35ms 5", "2024-03-05 12:00:01Z GET /a 200 1ms 5",
    "2024-03-05T12:00:01 GET /a 200 35ms 5", "2024-03-05T12:00:01Z get /a 200 35ms 5", "2024-03-05T12:00:01Z GET a/b 200 35ms 5",
    "2024-03-05T12:00:01Z GET /a 600 35ms 5", "2024-03-05T12:00:01Z GET /a 099 35ms 5", "2024-03-05T12:00:01Z GET /a 2xx 35ms 5",
    "2024-03-05T12:00:01Z GET /a 200 35 5", "2024-03-05T12:00:01Z GET /a 200 3.5ms 5", "2024-03-05T12:00:01Z GET /a 200 35ms -5",
    "2024-03-05T12:00:01Z  GET /a 200 35ms 5", "2024-03-05T12:00:01Z GET /a 200 35ms 5kb",
]


def run(cwd, *args, stdin=""):
    p = subprocess.run(["/usr/bin/python3", TOOL, *args], cwd=str(cwd), input=stdin, capture_output=True, text=True,
                       timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"})
    return p.returncode, p.stdout, p.stderr


# --- independent reference ---

def ref_parse(line):
    parts = line.split(" ")
    if len(parts) != 6:
        return None
    ts, method, path, status, dur, size = parts
    if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", ts):
        return None
    try:
        datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    if not re.fullmatch(r"[A-Z]+", method) or not path.startswith("/"):
        return None
    if not re.fullmatch(r"\d{3}", status) or not 100 <= int(status) <= 599:
        return None
    if not re.fullmatch(r"\d+ms", dur) or not re.fullmatch(r"\d+", size):
        return None
    return ts, path, int(status), int(dur[:-2]), int(size)


def norm(path):
    path = path.split("?")[0]
    return "/".join("{id}" if re.fullmatch(r"[0-9]+", s) else s for s in path.split("/"))


def ref_summary(text, since=None, until=None, statuses=(), top=5):
    recs, skipped = [], 0
    for line in text.split("\n"):
        if not line.strip():
            continue
        r = ref_parse(line)
        if r is None:
            skipped += 1
        else:
            recs.append(r)
    def ok(r):
        if since and r[0] < since or until and r[0] >= until:
            return False
        if statuses and not any(s == str(r[2]) or (s[1:] == "xx" and s[0] == str(r[2])[0]) for s in statuses):
            return False
        return True
    kept = [r for r in recs if ok(r)]
    st = {f"{c}xx": sum(1 for r in kept if r[2] // 100 == c) for c in range(1, 6)}
    d = sorted(r[3] for r in kept)
    lat = None
    if d:
        lat = {f"p{q}": d[math.ceil(q * len(d) / 100) - 1] for q in (50, 90, 99)}
        lat["max"] = d[-1]
    counts = {}
    for r in kept:
        counts[norm(r[1])] = counts.get(norm(r[1]), 0) + 1
    tops = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
    obj = {"requests": len(kept), "skipped": skipped, "bytes": sum(r[4] for r in kept), "status": st,
           "latency_ms": lat, "top_paths": [list(t) for t in tops]}
    lines = [f"requests: {len(kept)}", f"skipped: {skipped}", f"bytes: {obj['bytes']}",
             "status: " + " ".join(f"{k}={v}" for k, v in st.items()),
             "latency_ms: " + (" ".join(f"{k}={v}" for k, v in lat.items()) if lat else "n/a"), "top paths:"]
    lines += [f"  {p} {c}" for p, c in tops]
    return obj, "\n".join(lines) + "\n", (0 if kept else 1)


def random_log(rng, n):
    paths = ["/api/users/{}", "/api/users/{}/orders", "/health", "/api/orders", "/static/app.{}.js", "/api/v2/items/{}?page={}",
             "/a//b", "/x/12ab/34"]
    out = []
    base = datetime.datetime(2024, 2, 28, 23, 0, 0)
    for i in range(n):
        if rng.random() < 0.07:
            out.append(rng.choice(MALFORMED))
            continue
        if rng.random() < 0.03:
            out.append(rng.choice(["", "   "]))
            continue
        ts = (base + datetime.timedelta(seconds=rng.randint(0, 7200))).strftime("%Y-%m-%dT%H:%M:%SZ")
        p = rng.choice(paths).format(rng.randint(1, 30), rng.randint(1, 3))
        status = rng.choice([200, 200, 200, 201, 204, 301, 304, 400, 404, 404, 500, 503, 101])
        out.append(f"{ts} {rng.choice(['GET', 'GET', 'POST', 'DELETE'])} {p} {status} {rng.randint(0, 3000)}ms {rng.randint(0, 10**6)}")
    return "\n".join(out) + ("\n" if rng.random() < 0.8 else "")


# ---------------- tests ----------------

def test_sample_text(tmp_path):
    (tmp_path / "access.log").write_text(SAMPLE)
    exp = ("requests: 4\nskipped: 1\nbytes: 594\nstatus: 1xx=0 2xx=3 3xx=0 4xx=1 5xx=0\n"
           "latency_ms: p50=12 p90=120 p99=120 max=120\ntop paths:\n  /api/users/{id} 2\n  /api/orders 1\n")
    assert run(tmp_path, "--until", "2024-03-05T12:00:05Z", "--top", "2", "access.log") == (0, exp, "")
    assert run(tmp_path, "access.log") == (0, ref_summary(SAMPLE)[1], "")


@pytest.mark.parametrize("seed", range(6))
def test_random_text(tmp_path, seed):
    rng = random.Random(seed)
    text = random_log(rng, rng.randint(50, 400))
    (tmp_path / "a.log").write_text(text)
    args, kw = [], {}
    if rng.random() < 0.5:
        kw["since"] = f"2024-02-28T23:{rng.randint(0, 59):02d}:00Z"
        args += ["--since", kw["since"]]
    if rng.random() < 0.5:
        kw["until"] = f"2024-02-29T00:{rng.randint(0, 59):02d}:30Z"
        args += ["--until", kw["until"]]
    if rng.random() < 0.6:
        kw["statuses"] = rng.sample(["2xx", "404", "5xx", "301", "1xx"], rng.randint(1, 3))
        for s in kw["statuses"]:
            args += ["--status", s]
    if rng.random() < 0.7:
        kw["top"] = rng.randint(1, 9)
        args += ["--top", str(kw["top"])]
    obj, txt, rc = ref_summary(text, **kw)
    assert run(tmp_path, *args, "a.log") == (rc, txt, "")


@pytest.mark.parametrize("seed", range(4))
def test_random_json(tmp_path, seed):
    rng = random.Random(100 + seed)
    text = random_log(rng, rng.randint(1, 300))
    (tmp_path / "b.log").write_text(text)
    obj, _, rc = ref_summary(text, statuses=("4xx", "200"), top=3)
    code, out, err = run(tmp_path, "--json", "--status", "4xx", "--status", "200", "--top", "3", "b.log")
    assert (code, err) == (rc, "")
    assert json.dumps(json.loads(out), sort_keys=True) == json.dumps(obj, sort_keys=True)
    assert out.count("\n") == 1


def test_multiple_sources_gzip_and_stdin(tmp_path):
    rng = random.Random(77)
    t1, t2, t3 = random_log(rng, 120), random_log(rng, 80), random_log(rng, 60)
    if not t1.endswith("\n"):
        t1 += "\n"
    if not t2.endswith("\n"):
        t2 += "\n"
    (tmp_path / "one.log").write_text(t1)
    with gzip.open(tmp_path / "two.log.gz", "wt") as fh:
        fh.write(t2)
    obj, txt, rc = ref_summary(t1 + t2 + t3, top=7)
    assert run(tmp_path, "--top", "7", "one.log", "two.log.gz", "-", stdin=t3) == (rc, txt, "")
    obj, txt, rc = ref_summary(t3)
    assert run(tmp_path, stdin=t3) == (rc, txt, "")


def test_nothing_matches(tmp_path):
    (tmp_path / "a.log").write_text(SAMPLE)
    exp = ("requests: 0\nskipped: 1\nbytes: 0\nstatus: 1xx=0 2xx=0 3xx=0 4xx=0 5xx=0\nlatency_ms: n/a\ntop paths:\n")
    assert run(tmp_path, "--status", "3xx", "a.log") == (1, exp, "")
    code, out, err = run(tmp_path, "--json", "--since", "2025-01-01T00:00:00Z", "a.log")
    assert (code, err) == (1, "")
    assert json.dumps(json.loads(out), sort_keys=True) == json.dumps(
        {"requests": 0, "skipped": 1, "bytes": 0, "status": {"1xx": 0, "2xx": 0, "3xx": 0, "4xx": 0, "5xx": 0},
         "latency_ms": None, "top_paths": []}, sort_keys=True)
    assert run(tmp_path, stdin="") == (1, "requests: 0\nskipped: 0\nbytes: 0\nstatus: 1xx=0 2xx=0 3xx=0 4xx=0 5xx=0\nlatency_ms: n/a\ntop paths:\n", "")


@pytest.mark.parametrize("bad", MALFORMED)
def test_malformed_lines(tmp_path, bad):
    good = "2024-03-05T12:00:01Z GET /ok 200 5ms 1"
    (tmp_path / "m.log").write_text(f"{good}\n\n{bad}\n{good}\n")
    assert run(tmp_path, "m.log") == (0, ref_summary(f"{good}\n{good}\n")[1].replace("skipped: 0", "skipped: 1"), "")
    assert run(tmp_path, "--strict", "m.log") == (3, "", "logsum: m.log:3: malformed line\n")


def test_strict_reports_first_problem_per_source(tmp_path):
    good = "2024-03-05T12:00:01Z GET /ok 200 5ms 1\n"
    (tmp_path / "clean.log").write_text(good * 3)
    assert run(tmp_path, "--strict", "clean.log", "-", stdin=good + good + "oops\nbad again\n") == (3, "", "logsum: <stdin>:3: malformed line\n")
    assert run(tmp_path, "--strict", "clean.log") == (0, ref_summary(good * 3)[1], "")


def test_unreadable_file(tmp_path):
    (tmp_path / "a.log").write_text(SAMPLE)
    assert run(tmp_path, "a.log", "missing.log") == (2, "", "logsum: cannot read missing.log\n")
    (tmp_path / "fake.gz").write_text("not gzip")
    assert run(tmp_path, "fake.gz") == (2, "", "logsum: cannot read fake.gz\n")


@pytest.mark.parametrize("args", [["--top", "0"], ["--top", "x"], ["--top"], ["--since", "2024-03-05"],
                                  ["--until", "2024-02-30T00:00:00Z"], ["--status", "6xx"], ["--status", "99"],
                                  ["--status", "abc"], ["--bogus"]])
def test_usage_errors(tmp_path, args):
    (tmp_path / "a.log").write_text(SAMPLE)
    code, out, err = run(tmp_path, *args, "a.log")
    assert (code, out) == (2, "") and err.strip() != ""
