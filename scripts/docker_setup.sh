#!/usr/bin/env bash
# Make the docker backend usable here, idempotently: install the engine and debootstrap,
# start dockerd if no engine answers, and build the taskgym images offline (skipped when
# present). If it starts dockerd, it writes dockerd's pid to $TASKGYM_DOCKERD_PIDFILE (when
# set) so the caller can stop exactly that process. Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq docker.io debootstrap >/dev/null
fi
python3 -c "import docker" 2>/dev/null || python3 -m pip install -q 'docker>=7'

if ! docker info >/dev/null 2>&1; then
    log="${TMPDIR:-/tmp}/taskgym-dockerd.log"
    echo "starting dockerd (log: $log)"
    dockerd --bridge=none --iptables=false --ip-forward=false >"$log" 2>&1 &
    pid=$!
    if [ -n "${TASKGYM_DOCKERD_PIDFILE:-}" ]; then echo "$pid" >"$TASKGYM_DOCKERD_PIDFILE"; fi
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        kill -0 "$pid" 2>/dev/null || { echo "dockerd exited; see $log" >&2; exit 1; }
        sleep 0.5
    done
    docker info >/dev/null 2>&1 || { echo "dockerd did not answer in 30 s; see $log" >&2; exit 1; }
fi

# every env's image (cad-cadquery-v0 and finance-pdf-v0 start from the large host-python image,
# built first)
PYTHONPATH=src python3 -m taskgym images build
