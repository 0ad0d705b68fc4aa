#!/usr/bin/env bash
# taskgym serve against OpenEnv's own clients, in a venv of their own: taskgym with its serve
# extra and openenv 0.10.0 (which pulls gradio and fastmcp; no torch). Runs the tests marked
# `openenv` (the main run deselects them with -m "not openenv"); fails if any of them is
# skipped. Set TASKGYM_OPENENV_VENV to a folder to keep the venv there and reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
source scripts/venv_suite.sh
venv_path "${TASKGYM_OPENENV_VENV:-}"
uv_venv
python3 -m uv pip install -q -p "$venv/bin/python" -e ".[serve]" "openenv==0.10.0" \
    "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
no_torch openenv
run_marked scripts/test_openenv.sh openenv tests/server "$@"
