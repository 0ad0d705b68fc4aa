#!/usr/bin/env bash
# The administrator's step of the docker backend, idempotently: install the engine and
# debootstrap, and start dockerd if no engine answers. Needs root (sudo). It touches no
# Python: the images are built afterwards by `taskgym images build`, run from the Python that
# will run taskgym (a venv's, say), because the host-python image is packed from that very
# interpreter and its packages. If it starts dockerd, it writes dockerd's pid to
# $TASKGYM_DOCKERD_PIDFILE (when set) so the caller can stop exactly that process.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq docker.io debootstrap >/dev/null
fi

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

echo "docker engine ready. Now build the images from the Python that will run taskgym (a venv's,"
echo "with taskgym[docker] and the envs' extras): taskgym images build, or with sudo:"
echo '  sudo "$(command -v python3)" -m taskgym images build    # see docs/docker.md'
