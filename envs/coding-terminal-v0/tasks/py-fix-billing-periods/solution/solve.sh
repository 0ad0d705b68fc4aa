#!/bin/bash
set -e
cd /app
/usr/bin/python3 - <<'PY'
def sub(path, old, new):
    s = open(path).read()
    assert old in s, (path, old)
    open(path, "w").write(s.replace(old, new))

sub("billing/calendar_utils.py", "    return year % 4 == 0\n",
    "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)\n")
sub("billing/periods.py",
    "        nxt = cur + _dt.timedelta(days=days_in_month(cur.year, cur.month))\n",
    "        if cur.month == 12:\n            nxt = _dt.date(cur.year + 1, 1, 1)\n"
    "        else:\n            nxt = _dt.date(cur.year, cur.month + 1, 1)\n")
sub("billing/cycles.py",
    "    out = [anchor]\n    while len(out) < count:\n        out.append(add_months(out[-1], 1))\n    return out[:count]\n",
    "    return [add_months(anchor, k) for k in range(count)]\n")
sub("billing/cycles.py",
    "    start = anchor\n    while True:\n        nxt = add_months(start, 1)\n        if day < nxt:\n            return start, nxt\n        start = nxt\n",
    "    k = (day.year - anchor.year) * 12 + (day.month - anchor.month)\n"
    "    k = max(k - 1, 0)\n"
    "    while add_months(anchor, k + 1) <= day:\n        k += 1\n"
    "    return add_months(anchor, k), add_months(anchor, k + 1)\n")
PY
