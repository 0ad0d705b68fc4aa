#!/bin/bash
set -euo pipefail
cat > /app/backup/backup.sh <<'SH'
#!/bin/bash
# Nightly backup, run from cron:  backup.sh SRC_DIR DEST_DIR
set -euo pipefail
if [ $# -ne 2 ]; then echo "usage: $0 SRC_DIR DEST_DIR" >&2; exit 2; fi
SRC=${1%/}
DEST=$2
NAME=$(basename "$SRC")
PARENT=$(dirname "$SRC")
TS=${BACKUP_TIME:-$(date -u +%Y%m%dT%H%M%SZ)}
ARCHIVE="$DEST/$NAME-$TS.tar.gz"

mkdir -p "$DEST"
TMP=$(mktemp "$DEST/.$NAME-$TS.XXXXXX.partial")
trap 'rm -f "$TMP"' EXIT
if ! tar -czf "$TMP" -C "$PARENT" "$NAME"; then
    echo "backup of $SRC failed; nothing rotated" >&2
    exit 1
fi
mv -f "$TMP" "$ARCHIVE"
trap - EXIT
echo "$ARCHIVE"

python3 - "$DEST" "$NAME" "${KEEP_DAILY:-7}" "${KEEP_WEEKLY:-4}" <<'PY'
import datetime, os, re, sys
dest, name, daily, weekly = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
pat = re.compile(r"^" + re.escape(name) + r"-(\d{8}T\d{6}Z)\.tar\.gz$")
backups = {}
for entry in os.listdir(dest):
    m = pat.match(entry)
    if m and os.path.isfile(os.path.join(dest, entry)):
        try:
            datetime.datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ")
        except ValueError:
            continue
        backups[m.group(1)] = entry
by_day, by_week = {}, {}
for ts in sorted(backups):  # later timestamps overwrite: newest per bucket
    d = datetime.datetime.strptime(ts[:8], "%Y%m%d").date()
    by_day[ts[:8]] = ts
    by_week[d.isocalendar()[:2]] = ts
keep = {by_day[k] for k in sorted(by_day, reverse=True)[:daily]}
keep |= {by_week[k] for k in sorted(by_week, reverse=True)[:weekly]}
for ts, entry in backups.items():
    if ts not in keep:
        os.remove(os.path.join(dest, entry))
PY
SH
