#!/usr/bin/env bash
# Install the test dependencies and run everything CI runs: lint, types, docs, tests
# (the sandbox conformance and escape tests also as an unprivileged user, where possible),
# then the docker backend's tests, then the docker backend as users install taskgym (a fresh
# venv with the extras builds its own images and plays one oracle task per env:
# scripts/test_docker_venv.sh, after the docker tests so that it shares the CPUs with no timed
# test). The docker engine (scripts/docker_setup.sh, the administrator's step) and this
# interpreter's images (`taskgym images build`, the user's step) are prepared in the
# background while the local suites run; the README's first command runs in a fresh clone
# and venv (scripts/test_fresh_machine.sh, about 2 minutes on 2 CPUs) in the background
# while lint, types and docs are checked, and must pass before the tests start (so that no
# timed test shares the CPUs with it). Both background jobs are bounded (a stalled package
# download must fail CI with the job's log, not hold it until CI's own limit).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install.sh --test

TASKGYM_DOCKERD_PIDFILE="$(mktemp)"
export TASKGYM_DOCKERD_PIDFILE
setup_log="$(mktemp)"
fresh_log="$(mktemp)"
stop_dockerd() {  # only the dockerd that docker_setup.sh started, by its pid
    local pid
    pid="$(cat "$TASKGYM_DOCKERD_PIDFILE" 2>/dev/null || true)"
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
    rm -f "$TASKGYM_DOCKERD_PIDFILE" "$setup_log" "$fresh_log"
}
trap stop_dockerd EXIT
setup_limit=2400  # seconds; installing the engine and building every image takes far less
fresh_limit=1200  # the README's first command takes about a minute
venv_limit=1800   # scripts/test_docker_venv.sh: install, images and five episodes
started=$SECONDS
took() { echo "== $1 done at $((SECONDS - started)) s"; }
timeout --kill-after=30 "$setup_limit" bash -c \
    './scripts/docker_setup.sh && python3 -m taskgym images build' >"$setup_log" 2>&1 &
setup_pid=$!
timeout --kill-after=30 "$fresh_limit" ./scripts/test_fresh_machine.sh >"$fresh_log" 2>&1 &
fresh_pid=$!

python3 -m ruff check src tests benchmarks hatch_build.py
python3 -m mypy
NO_MKDOCS_2_WARNING=1 python3 -m mkdocs build --strict --quiet --site-dir "$(mktemp -d)"
python3 scripts/domain_lines.py --max 300  # host lines per domain; known overruns may not grow
if ! wait "$fresh_pid"; then
    cat "$fresh_log" >&2
    echo "scripts/test_fresh_machine.sh failed or ran past ${fresh_limit} s (its output is above)" >&2
    exit 1
fi
tail -n 1 "$fresh_log"
took "lint, types, docs and the README's first command"
TASKGYM_REQUIRE_SANDBOX=1 python3 -m pytest -m "not docker and not trainers and not openenv and not ors and not trl and not verl and not ray" "$@"
took "the local tests"
./scripts/test_unprivileged.sh
took "the unprivileged tests"
./scripts/test_integrations.sh  # the trainers' shared core against the real packages, in its own venv
took "the trainers' shared core"
./scripts/test_openenv.sh  # taskgym serve driven by OpenEnv's own clients, in its own venv
took "taskgym serve against OpenEnv's clients"
./scripts/test_ors.sh  # taskgym serve's Open Reward Standard routes driven by the openreward client, in its own venv
took "taskgym serve against the openreward client"
./scripts/test_trl.sh  # TRL's GRPOTrainer on CPU with a tiny model, and the AsyncGRPOTrainer contract, in its own venv
took "TRL"
./scripts/test_verl.sh  # taskgym's verl agent loop with verl's own config and a scripted server, in its own venv
took "verl"
./scripts/test_ray.sh  # taskgym.ray.EnvPool on a three-node Ray cluster on loopback, in its own venv
took "Ray"

# -- docker backend: engine, offline images, then every docker-marked test (none may skip) --
if ! wait "$setup_pid"; then
    cat "$setup_log" >&2
    echo "scripts/docker_setup.sh or taskgym images build failed or ran past ${setup_limit} s" \
         "(the output is above)" >&2
    exit 1
fi
tr '\r' '\n' <"$setup_log" | grep -v '^taskgym images: ' || true  # without the progress bar's redraws
took "the docker engine and images (in the background)"
TASKGYM_REQUIRE_DOCKER=1 python3 -m pytest -m docker "$@"
took "the docker tests"
timeout --kill-after=30 "$venv_limit" ./scripts/test_docker_venv.sh
took "the docker backend from a fresh venv"
