#!/usr/bin/env bash
# taskgym.integrations.trl against the real trainer, in a venv of its own: torch 2.13 (pip
# takes the CPU build here; the docs say how GPU users get theirs), then the `trl` extra
# (trl==1.16.0, transformers 5, accelerate, datasets; and `pdf` for finance-pdf-v0) with pip in
# the same venv. Runs the tests
# marked `trl` (the main run deselects them with -m "not trl"): a real GRPOTrainer on CPU with
# a tiny model, and the AsyncGRPOTrainer constraints (a spawned child builds the factory).
# Fails if any of them is skipped. Set TASKGYM_TRL_VENV to a folder to keep the venv there.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
torch_version="2.13.0"
if [ -n "${TASKGYM_TRL_VENV:-}" ]; then
    venv="$TASKGYM_TRL_VENV"
else
    scratch="$(mktemp -d)"
    trap 'rm -rf "$scratch"' EXIT
    venv="$scratch/venv"
fi
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check "torch==$torch_version"
"$py" -m pip install -q --disable-pip-version-check -e ".[trl,pdf]" \
    "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100" "torch==$torch_version"
installed="$("$py" -c "import torch; print(torch.__version__.split('+')[0])")"
if [ "$installed" != "$torch_version" ]; then
    echo "torch $installed in the TRL venv; expected $torch_version" >&2
    exit 1
fi
echo "trl venv ready in $((SECONDS - started)) s"
log="$(mktemp)"
status=0
TRL_EXPERIMENTAL_SILENCE=1 "$py" -m pytest -m trl tests/integrations -q -p no:cacheprovider -rs \
    "$@" | tee "$log" || status=$?
summary="$(tail -n 1 "$log")"
rm -f "$log"
if [ "$status" -ne 0 ]; then
    exit "$status"
fi
if [[ "$summary" == *skipped* ]]; then
    echo "scripts/test_trl.sh: a trl test was skipped; each must run" >&2
    exit 1
fi
echo "scripts/test_trl.sh took $((SECONDS - started)) s"
