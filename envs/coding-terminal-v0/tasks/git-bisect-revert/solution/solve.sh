#!/bin/bash
set -euo pipefail
cd /app
cat > /tmp/check.sh <<'SH'
#!/bin/sh
out=$(python3 -c 'import verlib; print(verlib.compare("1.4.0-rc.10", "1.4.0-rc.9"))' 2>/dev/null) || exit 125
[ "$out" = 1 ]
SH
git bisect start main v1.2.0 >/dev/null
git bisect run sh /tmp/check.sh >/dev/null
bad=$(git rev-parse refs/bisect/bad)
git bisect reset >/dev/null 2>&1
git checkout -q main
echo "$bad" > /app/first_bad.txt
git revert --no-edit "$bad" >/dev/null
