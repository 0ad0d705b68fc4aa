#!/bin/bash
# Nightly backup, run from cron:  backup.sh SRC_DIR DEST_DIR
set -u
SRC=$1
DEST=$2
KEEP=${KEEP_DAILY:-7}
NAME=$(basename "$SRC")
TS=${BACKUP_TIME:-$(date -u +%Y%m%dT%H%M%SZ)}
ARCHIVE="$DEST/$NAME-$TS.tar.gz"

mkdir -p "$DEST"
tar -czf "$ARCHIVE" -C "$(dirname "$SRC")" "$NAME"
echo "$ARCHIVE"

# rotation: keep the newest $KEEP backups
cd $DEST
for old in $(ls -t $NAME* | tail -n +$KEEP); do
    rm -f $old
done
