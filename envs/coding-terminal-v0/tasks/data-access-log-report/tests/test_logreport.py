import random
import re
from datetime import datetime, timedelta, timezone

LINE_RE = re.compile(
    r'^(\S+) \S+ \S+ \[(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})\] '
    r'"([A-Z]+) (\S+) (HTTP/\d\.\d)" (\d{3}) (\d+|-) "[^"]*" "[^"]*"$')
MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}


def report(text):
    total = 0
    malformed = 0
    ips = set()
    status = {2: 0, 3: 0, 4: 0, 5: 0}
    bytes_total = 0
    paths = {}
    ip_bytes = {}
    hours = {}
    for line in text.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if line.strip() == "":
            continue
        m = LINE_RE.match(line)
        if not m or m.group(3) not in MONTHS:
            malformed += 1
            continue
        ip, dd, mon, yyyy, HH, MM, SS, sign, zh, zm, meth, target, proto, st, nb = m.groups()
        try:
            local = datetime(int(yyyy), MONTHS[mon], int(dd), int(HH), int(MM), int(SS))
        except ValueError:
            malformed += 1
            continue
        off = timedelta(hours=int(zh), minutes=int(zm))
        utc = local - off if sign == "+" else local + off
        total += 1
        ips.add(ip)
        cls = int(st) // 100
        if cls in status:
            status[cls] += 1
        b = 0 if nb == "-" else int(nb)
        bytes_total += b
        path = target.split("?", 1)[0]
        paths[path] = paths.get(path, 0) + 1
        ip_bytes[ip] = ip_bytes.get(ip, 0) + b
        hk = utc.strftime("%Y-%m-%dT%H")
        hours[hk] = hours.get(hk, 0) + 1
    out = ["total_requests: %d" % total, "unique_ips: %d" % len(ips)]
    for c in (2, 3, 4, 5):
        out.append("status_%dxx: %d" % (c, status[c]))
    out.append("bytes_total: %d" % bytes_total)
    out.append("top_paths:")
    for p, n in sorted(paths.items(), key=lambda kv: (-kv[1], kv[0]))[:5]:
        out.append("  %d %s" % (n, p))
    out.append("top_ips_by_bytes:")
    for ip, n in sorted(ip_bytes.items(), key=lambda kv: (-kv[1], kv[0]))[:3]:
        out.append("  %d %s" % (n, ip))
    if hours:
        hk, n = sorted(hours.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        out.append("busiest_hour_utc: %s %d" % (hk, n))
    else:
        out.append("busiest_hour_utc: none 0")
    out.append("malformed_lines: %d" % malformed)
    return "\n".join(out) + "\n"


PATHS = ["/", "/index.html", "/api/v1/items", "/api/v1/items/42", "/api/v1/login", "/static/app.js",
         "/static/app.css", "/favicon.ico", "/healthz", "/search", "/admin", "/robots.txt"]
UAS = ["Mozilla/5.0 (X11; Linux x86_64)", "curl/8.4.0", "Go-http-client/1.1", "-",
       "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36"]
MON = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


def gen_log(rng, n):
    ips = ["%d.%d.%d.%d" % (rng.randrange(1, 224), rng.randrange(256), rng.randrange(256), rng.randrange(1, 255))
           for _ in range(rng.randrange(5, 40))] + ["2001:db8::%x" % rng.randrange(65536)]
    base = datetime(2024, 2, 28, 20, 0, 0)
    lines = []
    for _ in range(n):
        r = rng.random()
        if r < 0.04:
            lines.append(rng.choice([
                "", "   ", "garbage line without structure",
                '%s - - [29/Feb/2024:10:00:00 +0000] "-" 400 0 "-" "-"' % rng.choice(ips),
                '%s - - [31/Feb/2024:10:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "-"' % rng.choice(ips),
                '%s - - [01/Mar/2024:10:00:00 +0000] "GET /x HTTP/1.1" 200 "-" "-"' % rng.choice(ips),
                '%s - - [01/Foo/2024:10:00:00 +0000] "GET /x HTTP/1.1" 200 1 "-" "-"' % rng.choice(ips),
                '%s - - [01/Mar/2024:10:00:00 +0000] "GET /a b HTTP/1.1" 200 1 "-" "-"' % rng.choice(ips),
            ]))
            continue
        t = base + timedelta(seconds=rng.randrange(0, 3 * 86400))
        offh = rng.choice([0, 0, 0, 1, 2, 5, -5, -8, 9])
        offm = rng.choice([0, 0, 0, 30]) if offh else 0
        local = t + timedelta(hours=offh, minutes=offm if offh >= 0 else -offm)
        sign = "+" if offh >= 0 else "-"
        ts = "%02d/%s/%04d:%02d:%02d:%02d %s%02d%02d" % (local.day, MON[local.month - 1], local.year, local.hour,
                                                        local.minute, local.second, sign, abs(offh), offm)
        path = rng.choice(PATHS)
        if rng.random() < 0.3:
            path += "?q=%d&page=%d" % (rng.randrange(100), rng.randrange(5))
        st = rng.choice([200, 200, 200, 201, 204, 301, 302, 304, 400, 401, 403, 404, 404, 500, 502, 503, 101])
        nb = "-" if rng.random() < 0.1 else str(rng.randrange(0, 200000))
        meth = rng.choice(["GET", "GET", "GET", "POST", "HEAD", "PUT", "DELETE"])
        user = rng.choice(["-", "-", "alice", "bob"])
        lines.append('%s - %s [%s] "%s %s HTTP/%s" %d %s "%s" "%s"' % (
            rng.choice(ips), user, ts, meth, path, rng.choice(["1.1", "1.0", "2.0"]), st, nb,
            rng.choice(["-", "https://example.com/", "https://example.com/search?q=x"]), rng.choice(UAS)))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- tests
import subprocess

import pytest

EXPECTED_GIVEN = 'total_requests: 863\nunique_ips: 36\nstatus_2xx: 259\nstatus_3xx: 150\nstatus_4xx: 264\nstatus_5xx: 144\nbytes_total: 79728722\ntop_paths:\n  89 /healthz\n  80 /index.html\n  77 /api/v1/login\n  76 /favicon.ico\n  73 /admin\ntop_ips_by_bytes:\n  3238223 182.75.108.223\n  3029159 55.208.117.53\n  2872565 107.238.63.186\nbusiest_hour_utc: 2024-03-02T00 24\nmalformed_lines: 27\n'


def run_script(tmp_path, text, name="access.log"):
    p = tmp_path / name
    p.write_bytes(text.encode("utf-8"))
    r = subprocess.run(["/usr/bin/python3", "/app/logreport.py", str(p)], capture_output=True,
                       timeout=60, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr.decode(errors="replace")[-2000:]
    return r.stdout.decode("utf-8")


def test_report_file_for_shipped_log():
    with open("/app/report.txt", encoding="utf-8") as fh:
        assert fh.read() == EXPECTED_GIVEN


def test_script_on_shipped_log(tmp_path):
    text = gen_log(random.Random(2024), 900)
    assert report(text) == EXPECTED_GIVEN
    assert run_script(tmp_path, text) == EXPECTED_GIVEN


@pytest.mark.parametrize("seed", range(5))
def test_script_on_fresh_logs(tmp_path, seed):
    rng = random.Random(31337 + seed)
    text = gen_log(rng, rng.randrange(50, 3000))
    assert run_script(tmp_path, text) == report(text)


def test_empty_log(tmp_path):
    assert run_script(tmp_path, "") == report("")
    assert run_script(tmp_path, "\n  \njunk\n") == report("\n  \njunk\n")


def test_crlf_offsets_and_ties(tmp_path):
    lines = [
        '10.0.0.2 - - [31/Dec/2023:23:30:00 -0130] "GET /b?x=1 HTTP/1.1" 200 100 "-" "ua"',
        '10.0.0.1 - - [01/Jan/2024:02:10:00 +0100] "GET /a HTTP/1.1" 404 - "-" "ua"',
        '10.0.0.1 - - [01/Jan/2024:01:59:59 +0000] "POST /b HTTP/2.0" 503 100 "-" "ua"',
        '10.0.0.3 - - [01/Jan/2024:01:00:00 +0000] "GET /a HTTP/1.1" 101 0 "-" "ua"',
        '10.0.0.3 - - [30/Feb/2024:01:00:00 +0000] "GET /a HTTP/1.1" 200 0 "-" "ua"',
    ]
    text = "\r\n".join(lines) + "\r\n"
    got = run_script(tmp_path, text)
    assert got == report(text)
    assert "busiest_hour_utc: 2024-01-01T01 4\n" in got
