#!/bin/bash
set -e
cat > /app/logreport.py <<'PY'
#!/usr/bin/env python3
import re
import sys
from datetime import datetime, timedelta

LINE_RE = re.compile(
    r'^(\S+) \S+ \S+ \[(\d{2})/([A-Z][a-z]{2})/(\d{4}):(\d{2}):(\d{2}):(\d{2}) ([+-])(\d{2})(\d{2})\] '
    r'"([A-Z]+) (\S+) (HTTP/\d\.\d)" (\d{3}) (\d+|-) "[^"]*" "[^"]*"$')
MONTHS = {m: i + 1 for i, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}


def report(text):
    total = malformed = bytes_total = 0
    ips = set()
    status = {2: 0, 3: 0, 4: 0, 5: 0}
    paths, ip_bytes, hours = {}, {}, {}
    for line in text.split("\n"):
        if line.endswith("\r"):
            line = line[:-1]
        if not line.strip():
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
        if int(st) // 100 in status:
            status[int(st) // 100] += 1
        b = 0 if nb == "-" else int(nb)
        bytes_total += b
        path = target.split("?", 1)[0]
        paths[path] = paths.get(path, 0) + 1
        ip_bytes[ip] = ip_bytes.get(ip, 0) + b
        hk = utc.strftime("%Y-%m-%dT%H")
        hours[hk] = hours.get(hk, 0) + 1
    out = ["total_requests: %d" % total, "unique_ips: %d" % len(ips)]
    out += ["status_%dxx: %d" % (c, status[c]) for c in (2, 3, 4, 5)]
    out.append("bytes_total: %d" % bytes_total)
    out.append("top_paths:")
    out += ["  %d %s" % (n, p) for p, n in sorted(paths.items(), key=lambda kv: (-kv[1], kv[0]))[:5]]
    out.append("top_ips_by_bytes:")
    out += ["  %d %s" % (n, ip) for ip, n in sorted(ip_bytes.items(), key=lambda kv: (-kv[1], kv[0]))[:3]]
    if hours:
        hk, n = sorted(hours.items(), key=lambda kv: (-kv[1], kv[0]))[0]
        out.append("busiest_hour_utc: %s %d" % (hk, n))
    else:
        out.append("busiest_hour_utc: none 0")
    out.append("malformed_lines: %d" % malformed)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8", errors="surrogateescape", newline="") as fh:
        sys.stdout.write(report(fh.read()))
PY
python3 /app/logreport.py /app/logs/access.log > /app/report.txt
