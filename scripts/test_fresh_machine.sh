#!/usr/bin/env bash
# The README's first command, verbatim, as on a fresh machine: in a fresh clone of this
# repository (its committed HEAD: commit first) with a fresh venv first on PATH. The
# command is read from README.md (the first line of its first ```bash block), so the two
# cannot drift; this script fails when the command does. Run by scripts/test.sh. Its docker
# variant (a fresh venv with the extras, every image built from it, the oracle on docker) is
# scripts/test_docker_venv.sh.
#   TASKGYM_FRESH_KEEP=1 keeps the clone and venv (their folder is printed) for a look.
set -euo pipefail
cd "$(dirname "$0")/.."

command="$(awk '/^```bash$/ { getline; print; exit }' README.md)"
if [ -z "$command" ]; then
    echo "README.md has no \`\`\`bash block: nothing to check" >&2
    exit 1
fi
work="$(mktemp -d)"
if [ -z "${TASKGYM_FRESH_KEEP:-}" ]; then trap 'rm -rf "$work"' EXIT; else echo "kept: $work"; fi
git clone --quiet "$PWD" "$work/clone"
python3 -m venv "$work/venv"
echo "fresh clone $(git -C "$work/clone" rev-parse --short HEAD), fresh venv: $command"
started=$SECONDS
cd "$work/clone"
if ! env -u PYTHONPATH -u TASKGYM_ENVS -u PYTHONHOME VIRTUAL_ENV="$work/venv" \
        PATH="$work/venv/bin:$PATH" bash -euo pipefail -c "$command"; then
    echo "the README's first command failed on a fresh clone and venv: $command" >&2
    exit 1
fi
echo "the README's first command passed in $((SECONDS - started)) s"
