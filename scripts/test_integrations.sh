#!/usr/bin/env bash
# The shared trainer core's tests against the real packages, in a venv of their own:
# transformers 5.25 (get_json_schema, the chat-template renderer) and jinja2 from the
# trainers-core extra, and the trl 1.16 wheel's files (its chat templates) installed with
# --no-deps, so that the venv holds no torch. Runs the tests marked `trainers` (the main run
# deselects them with -m "not trainers"); fails if any of them is skipped. Set
# TASKGYM_TRAINERS_VENV to a folder to keep the venv there and reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
if [ -n "${TASKGYM_TRAINERS_VENV:-}" ]; then
    venv="$TASKGYM_TRAINERS_VENV"
else
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    venv="$scratch/venv"
fi
if ! python3 -m uv --version >/dev/null 2>&1; then
    python3 -m pip install -q uv
fi
python3 -m uv venv -q --allow-existing -p "$(command -v python3)" "$venv"
python3 -m uv pip install -q -p "$venv/bin/python" -e ".[trainers-core]" \
    "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100"
python3 -m uv pip install -q -p "$venv/bin/python" --no-deps "trl==1.16.0"
if "$venv/bin/python" -c "import torch" >/dev/null 2>&1; then
    echo "torch is installed in the trainers venv; it must not be (trl goes in with --no-deps)" >&2
    exit 1
fi
echo "trainers venv ready in $((SECONDS - started)) s"
log="$(mktemp)"
status=0
"$venv/bin/python" -m pytest -m trainers tests/integrations -q -p no:cacheprovider -rs "$@" \
    | tee "$log" || status=$?
summary="$(tail -n 1 "$log")"
rm -f "$log"
if [ "$status" -ne 0 ]; then
    exit "$status"
fi
if [[ "$summary" == *skipped* ]]; then
    echo "scripts/test_integrations.sh: a trainers test was skipped; each must run" >&2
    exit 1
fi
echo "scripts/test_integrations.sh took $((SECONDS - started)) s"
