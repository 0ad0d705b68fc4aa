#!/usr/bin/env bash
# Install the test dependencies and run everything CI runs: lint, types, docs, tests
# (the sandbox conformance and escape tests also as an unprivileged user, where possible),
# then the docker backend's tests. The docker engine and images are prepared in the
# background while the local suites run.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh --test

TASKGYM_DOCKERD_PIDFILE="$(mktemp)"
export TASKGYM_DOCKERD_PIDFILE
setup_log="$(mktemp)"
stop_dockerd() {  # only the dockerd that docker_setup.sh started, by its pid
    local pid
    pid="$(cat "$TASKGYM_DOCKERD_PIDFILE" 2>/dev/null || true)"
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
    rm -f "$TASKGYM_DOCKERD_PIDFILE" "$setup_log"
}
trap stop_dockerd EXIT
./scripts/docker_setup.sh >"$setup_log" 2>&1 &
setup_pid=$!

python3 -m ruff check src tests benchmarks hatch_build.py
python3 -m mypy
NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
TASKGYM_REQUIRE_SANDBOX=1 python3 -m pytest -m "not docker" "$@"
./scripts/test_unprivileged.sh

# -- docker backend: engine, offline images, then every docker-marked test (none may skip) --
if ! wait "$setup_pid"; then
    cat "$setup_log" >&2
    echo "scripts/docker_setup.sh failed (its output is above)" >&2
    exit 1
fi
cat "$setup_log"
TASKGYM_REQUIRE_DOCKER=1 python3 -m pytest -m docker "$@"
