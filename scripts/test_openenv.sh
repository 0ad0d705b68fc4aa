#!/usr/bin/env bash
# taskgym serve against OpenEnv's own clients, in a venv of their own: taskgym with its serve
# extra and openenv 0.10.0 (which pulls gradio and fastmcp; no torch). Runs the tests marked
# `openenv` (the main run deselects them with -m "not openenv"); fails if any of them is
# skipped. Set TASKGYM_OPENENV_VENV to a folder to keep the venv there and reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
if [ -n "${TASKGYM_OPENENV_VENV:-}" ]; then
    venv="$TASKGYM_OPENENV_VENV"
else
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    venv="$scratch/venv"
fi
if ! python3 -m uv --version >/dev/null 2>&1; then
    python3 -m pip install -q uv
fi
python3 -m uv venv -q --allow-existing -p "$(command -v python3)" "$venv"
python3 -m uv pip install -q -p "$venv/bin/python" -e ".[serve]" "openenv==0.10.0" \
    "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
if "$venv/bin/python" -c "import torch" >/dev/null 2>&1; then
    echo "torch is installed in the openenv venv; it must not be" >&2
    exit 1
fi
echo "openenv venv ready in $((SECONDS - started)) s"
log="$(mktemp)"
status=0
"$venv/bin/python" -m pytest -m openenv tests/server -q -p no:cacheprovider -rs "$@" \
    | tee "$log" || status=$?
summary="$(tail -n 1 "$log")"
rm -f "$log"
if [ "$status" -ne 0 ]; then
    exit "$status"
fi
if [[ "$summary" == *skipped* ]]; then
    echo "scripts/test_openenv.sh: an openenv test was skipped; each must run" >&2
    exit 1
fi
echo "scripts/test_openenv.sh took $((SECONDS - started)) s"
