#!/usr/bin/env bash
# taskgym serve's Open Reward Standard routes against the openreward package's own client, in
# a venv of its own: taskgym with its serve extra and openreward 0.1.167 (its FastAPI server is
# installed with it but not used). Runs the tests marked `ors` (the main run deselects them with
# -m "not ors"); fails if any of them is skipped. Set TASKGYM_ORS_VENV to a folder to keep the
# venv there and reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
source scripts/venv_suite.sh
venv_path "${TASKGYM_ORS_VENV:-}"
uv_venv
python3 -m uv pip install -q -p "$venv/bin/python" -e ".[serve]" "openreward==0.1.167" \
    "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
no_torch openreward
export OPENREWARD_DISABLE_UPDATE_CHECK=1  # the client's version check would reach the network
run_marked scripts/test_ors.sh ors tests/server "$@"
