#!/usr/bin/env bash
# The docker backend as users install taskgym: a fresh clone of this repository (its committed
# HEAD: commit first) installed with its extras into a fresh venv (not in editable mode, as
# from a package index), every env's image built from that venv's Python (`taskgym images
# build`), then the oracle of one task of each of those envs on the docker backend, which
# must score 1. Prints how long each stage took and the host-python image's size.
# The images get their own namespace ($TASKGYM_IMAGE_NAMESPACE, default taskgym-venv-ci), so
# the base interpreter's taskgym/* images are left as they are; the base image, which holds no
# Python of the host, is that namespace's tag of taskgym/base when present (debootstrap runs
# once per machine), and the namespace's tags are removed at the end. Needs root and a running
# engine (scripts/docker_setup.sh). Run by scripts/test.sh after the docker tests.
#   TASKGYM_FRESH_KEEP=1 keeps the clone, the venv and the images (the folder is printed).
set -euo pipefail
cd "$(dirname "$0")/.."

namespace="${TASKGYM_IMAGE_NAMESPACE:-taskgym-venv-ci}"
if [ "$namespace" = taskgym ]; then
    echo "TASKGYM_IMAGE_NAMESPACE=taskgym would replace the base interpreter's images" >&2
    exit 1
fi
# not under /tmp: every container covers /tmp with its own, so a Python there cannot be packed
work="$(mktemp -d -p /var/tmp taskgym-docker-venv-XXXXXX)"
chmod 755 "$work"  # as an installation is: uid 1000 runs its python3 in the containers
remove_images() {
    docker images --format '{{.Repository}}:{{.Tag}}' | grep "^$namespace/" |
        xargs -r docker rmi --force >/dev/null || true
}
if [ -z "${TASKGYM_FRESH_KEEP:-}" ]; then
    trap 'remove_images; rm -rf "$work"' EXIT
else
    echo "kept: $work (images: $namespace/*)"
fi
remove_images  # a previous run's, if any
stage() { echo "-- $1: $(($SECONDS - stage_started)) s"; stage_started=$SECONDS; }
stage_started=$SECONDS

git clone --quiet "$PWD" "$work/clone"
python3 -m venv "$work/venv"
"$work/venv/bin/python3" -m pip install --quiet --disable-pip-version-check \
    "$work/clone[docker,cad,pdf,mesh,game]"
stage "fresh clone $(git -C "$work/clone" rev-parse --short HEAD) installed with its extras into a fresh venv"

if docker image inspect taskgym/base >/dev/null 2>&1; then
    docker tag taskgym/base "$namespace/base"
fi
cd "$work"  # nothing of the checkout on the import path: the venv's taskgym runs
run() {
    env -u PYTHONPATH -u TASKGYM_ENVS -u PYTHONHOME TASKGYM_IMAGE_NAMESPACE="$namespace" \
        VIRTUAL_ENV="$work/venv" PATH="$work/venv/bin:$PATH" "$@"
}
run taskgym images build
stage "every image built from the venv's Python"
size="$(docker image inspect --format '{{.Size}}' "$namespace/host-python")"
echo "$namespace/host-python: $((size / 1000000)) MB"
run taskgym doctor | grep -E "^ok +docker: host-python matches"

run python3 - <<'EOF'
"""The oracle of one task of each env with an image, on the docker backend: score 1."""
import sys

import taskgym
from taskgym.agents import make_agent
from taskgym.evaluation import run_episode
from taskgym.sandbox.docker.images import env_ids_with_images

failed = []
for env_id in env_ids_with_images():
    env = taskgym.make(env_id, sandbox="docker")
    try:
        record = run_episode(env, make_agent("oracle", env), seed=0)
    finally:
        env.close()
    print(f"{env_id}: task {record.task_id}: oracle score {record.score:.3f}"
          + (f" ({record.error or record.reason})" if record.score != 1 else ""))
    if record.score != 1:
        failed.append(env_id)
sys.exit(f"the oracle did not score 1 on docker from a venv: {', '.join(failed)}" if failed else 0)
EOF
stage "the oracle of one task per env on docker"
