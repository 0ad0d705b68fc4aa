#!/usr/bin/env bash
# Install the test dependencies and run everything CI runs: lint, types, docs, tests
# (the sandbox conformance and escape tests also as an unprivileged user, where possible).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh --test

python3 -m ruff check src tests benchmarks
python3 -m mypy
NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
TASKGYM_REQUIRE_SANDBOX=1 python3 -m pytest -m "not docker" "$@"
./scripts/test_unprivileged.sh

# -- docker backend: engine, offline images, then every docker-marked test (none may skip) --
TASKGYM_DOCKERD_PIDFILE="$(mktemp)"
export TASKGYM_DOCKERD_PIDFILE
stop_dockerd() {  # only the dockerd that docker_setup.sh started, by its pid
    local pid
    pid="$(cat "$TASKGYM_DOCKERD_PIDFILE" 2>/dev/null || true)"
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
    rm -f "$TASKGYM_DOCKERD_PIDFILE"
}
trap stop_dockerd EXIT
./scripts/docker_setup.sh
TASKGYM_REQUIRE_DOCKER=1 python3 -m pytest -m docker "$@"
