#!/bin/bash
set -euo pipefail
cd /app
cp config/secrets.env /tmp/secrets.env.keep
git checkout -q -- config/secrets.env
export FILTER_BRANCH_SQUELCH_WARNING=1
git filter-branch -f --index-filter 'git rm -q --cached --ignore-unmatch config/secrets.env' \
  --prune-empty --tag-name-filter cat -- --all >/dev/null 2>&1
git for-each-ref --format='%(refname)' refs/original | while read -r r; do git update-ref -d "$r"; done
cp /tmp/secrets.env.keep config/secrets.env
echo "config/secrets.env" >> .git/info/exclude
git reflog expire --expire=now --expire-unreachable=now --all
rm -f .git/ORIG_HEAD
git gc -q --prune=now
