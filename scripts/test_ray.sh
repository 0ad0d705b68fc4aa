#!/usr/bin/env bash
# taskgym.ray.EnvPool on a real Ray cluster, in a venv of its own: taskgym with its ray extra
# (ray==2.60.0; no torch). Runs the tests marked `ray` (the main run deselects them with
# -m "not ray"): a head and two one-CPU nodes on 127.0.0.1 started by the tests themselves
# (ray.cluster_utils.Cluster) and stopped by them, every Ray process checked gone. Fails if
# any of them is skipped. Set TASKGYM_RAY_VENV to a folder to keep the venv there and reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
source scripts/venv_suite.sh
venv_path "${TASKGYM_RAY_VENV:-}"
uv_venv
python3 -m uv pip install -q -p "$venv/bin/python" -e ".[ray]" \
    "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
no_torch ray
run_marked scripts/test_ray.sh ray tests/distributed "$@"
