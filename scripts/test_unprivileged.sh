#!/usr/bin/env bash
# Run the sandbox conformance and escape tests as an ordinary user, as most users are:
# unprivileged user namespaces, and cgroup v2 delegation or rlimits instead of root's cgroups.
# As root this creates the user `taskgym-ci`, a virtualenv on the system Python it can read,
# and a copy of the sources it can read; as a non-root user the main run already did this.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" != 0 ]; then
  echo "test_unprivileged: already running as uid $(id -u); the main test run covered it"
  exit 0
fi
user=taskgym-ci
id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
work=$(mktemp -d /tmp/taskgym-unprivileged.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
mkdir "$work/src"
cp -r pyproject.toml hatch_build.py README.md src tests fixtures envs "$work/src/"
find "$work/src" -name '*.so' -delete  # built for this checkout's Python; the install builds its own
/usr/bin/python3 -m venv --without-pip "$work/venv"
python3 -m pip --python "$work/venv/bin/python" install --quiet --disable-pip-version-check \
  "$work/src" pytest pytest-timeout
chown -R "$user:" "$work"

# Without root there is no cgroup here (v1), so limits fall back to rlimits; the warning
# saying so is expected in this run.
runuser -u "$user" -- env -i PATH=/usr/bin:/bin HOME="/home/$user" TASKGYM_REQUIRE_SANDBOX=1 \
  "$work/venv/bin/python" -m pytest -q -p no:cacheprovider -W "default::RuntimeWarning" \
  -m "not docker" --rootdir "$work/src" -c "$work/src/pyproject.toml" \
  "$work/src/tests/sandbox/test_conformance.py" "$work/src/tests/sandbox/test_escape.py"
