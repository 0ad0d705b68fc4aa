#!/bin/bash
set -e
cd /app
/usr/bin/python3 - <<'PY'
p = "catalog/paging.py"
s = open(p).read()
s = s.replace("    return total // per_page + 1\n", "    return max(1, -(-total // per_page))\n")
s = s.replace("    stop = start + per_page - 1\n", "    stop = start + per_page\n")
open(p, "w").write(s)
PY
