# What the scripts that test an integration against its real packages, each in a venv of its
# own (test_integrations.sh, test_openenv.sh, test_ors.sh, test_trl.sh, test_verl.sh,
# test_ray.sh), share. Sourced, not run; the sourcing script has set -euo pipefail, cd'd to the
# repository and set started=$SECONDS.

# venv_path KEEP: $venv is KEEP when set (kept and reused), else a scratch folder removed at exit.
venv_path() {
    if [ -n "${1:-}" ]; then
        venv="$1"
    else
        scratch="$(mktemp -d)"
        trap 'rm -rf "$scratch"' EXIT
        venv="$scratch/venv"
    fi
}

# uv_venv: a venv at $venv made by uv (installed for this python3 first if missing).
uv_venv() {
    if ! python3 -m uv --version >/dev/null 2>&1; then
        python3 -m pip install -q uv
    fi
    python3 -m uv venv -q --allow-existing -p "$(command -v python3)" "$venv"
}

# no_torch WHAT: fails when the venv holds torch (the light venvs must not pull it).
no_torch() {
    if "$venv/bin/python" -c "import torch" >/dev/null 2>&1; then
        echo "torch is installed in the $1 venv; it must not be" >&2
        return 1
    fi
}

# run_marked SCRIPT MARKER FOLDER [pytest args]: the tests marked MARKER under FOLDER, run by
# the venv's Python; fails when they fail or when any of them was skipped (each must run).
run_marked() {
    local name="$1" marker="$2" folder="$3" log summary status=0
    shift 3
    echo "$marker venv ready in $((SECONDS - started)) s"
    log="$(mktemp)"
    "$venv/bin/python" -m pytest -m "$marker" "$folder" -q -p no:cacheprovider -rs "$@" \
        | tee "$log" || status=$?
    summary="$(tail -n 1 "$log")"
    rm -f "$log"
    if [ "$status" -ne 0 ]; then
        return "$status"
    fi
    if [[ "$summary" == *skipped* ]]; then
        echo "$name: a $marker test was skipped; each must run" >&2
        return 1
    fi
    echo "$name took $((SECONDS - started)) s"
}
