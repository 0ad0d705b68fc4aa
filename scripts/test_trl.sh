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
source scripts/venv_suite.sh
torch_version="2.13.0"
venv_path "${TASKGYM_TRL_VENV:-}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"  # pip, not uv: pip takes torch's CPU build from this disk
py="$venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check "torch==$torch_version"
"$py" -m pip install -q --disable-pip-version-check -e ".[trl,pdf]" \
    "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100" "torch==$torch_version"
installed="$("$py" -c "import torch; print(torch.__version__.split('+')[0])")"
if [ "$installed" != "$torch_version" ]; then
    echo "torch $installed in the TRL venv; expected $torch_version" >&2
    exit 1
fi
export TRL_EXPERIMENTAL_SILENCE=1
run_marked scripts/test_trl.sh trl tests/integrations "$@"
