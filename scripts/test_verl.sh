#!/usr/bin/env bash
# taskgym.integrations.verl against the real package, in a venv of its own: torch 2.13 first
# (pip takes the CPU build from this disk; the docs say how GPU users get theirs), then the
# `verl` extra (verl==0.9.1 with ray, transformers <5.11, hydra, tensordict, pyarrow, ...) with
# pip in the same venv, so that pip keeps the torch already there; then the trl==1.16.0 wheel's
# files with --no-deps (the tests take its Qwen2.5 chat template; nothing of trl is imported).
# pip, not uv: as for TRL, pip finds torch's CPU wheel through this machine's pip config. Runs
# the tests marked `verl` (the main run deselects them with -m "not verl"): the registered
# agent loop built by hydra from verl's own trainer config, with a scripted server manager, no
# Ray cluster and no GPU. Fails if any of them is skipped. Set TASKGYM_VERL_VENV to a folder to
# keep the venv there.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
source scripts/venv_suite.sh
torch_version="2.13.0"
venv_path "${TASKGYM_VERL_VENV:-}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install -q --disable-pip-version-check "torch==$torch_version"
"$py" -m pip install -q --disable-pip-version-check -e ".[verl]" \
    "pytest>=8" "pytest-timeout>=2.3" "hypothesis>=6.100" "torch==$torch_version"
"$py" -m pip install -q --disable-pip-version-check --no-deps "trl==1.16.0"
installed="$("$py" -c "import torch; print(torch.__version__.split('+')[0])")"
if [ "$installed" != "$torch_version" ]; then
    echo "torch $installed in the verl venv; expected $torch_version" >&2
    exit 1
fi
run_marked scripts/test_verl.sh verl tests/integrations "$@"
