#!/usr/bin/env bash
# The shared trainer core's tests against the real packages, in a venv of their own:
# transformers 5.25 (get_json_schema, the chat-template renderer) and jinja2 from the
# trainers-core extra, and the trl 1.16 wheel's files (its chat templates) installed with
# --no-deps, so that the venv holds no torch; skyrl-gym 0.4 (the skyrl extra) for SkyRL's text
# envs. Runs the tests marked `trainers` (the main run
# deselects them with -m "not trainers"); fails if any of them is skipped. Set
# TASKGYM_TRAINERS_VENV to a folder to keep the venv there and reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
source scripts/venv_suite.sh
venv_path "${TASKGYM_TRAINERS_VENV:-}"
uv_venv
python3 -m uv pip install -q -p "$venv/bin/python" -e ".[trainers-core,skyrl]" \
    "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
python3 -m uv pip install -q -p "$venv/bin/python" --no-deps "trl==1.16.0"
no_torch trainers  # trl goes in with --no-deps
run_marked scripts/test_integrations.sh trainers tests/integrations "$@"
