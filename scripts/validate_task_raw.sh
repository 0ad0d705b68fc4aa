#!/usr/bin/env bash
# Stand-alone check of one coding task folder, independent of the taskgym package:
# oracle (solution/solve.sh) must pass every hidden test and the untouched start state must not.
# The grader appends /app to sys.path; tests import the agent's modules directly.
# usage: scripts/validate_task_raw.sh TASK_DIR
set -euo pipefail
task=$(cd "$1" && pwd)
expected=$(/usr/bin/python3 -c "import tomllib,sys; print(tomllib.load(open(sys.argv[1],'rb')).get('verifier',{}).get('expected_tests',''))" "$task/task.toml")
run_box() {  # run_box WORKSPACE CMD...: hardened bwrap, workspace at /app, tests at /tests (read-only)
  local ws=$1; shift
  bwrap --ro-bind /usr /usr --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/bin /bin \
    --symlink usr/sbin /sbin --ro-bind /etc/alternatives /etc/alternatives --proc /proc --dev /dev \
    --tmpfs /tmp --bind "$ws" /app --ro-bind "$task/tests" /tests --chdir /app \
    --unshare-all --new-session --die-with-parent --cap-drop ALL --clearenv \
    --setenv PATH /usr/local/bin:/usr/bin:/bin --setenv HOME /tmp --setenv LANG C.UTF-8 --uid 1000 --gid 1000 "$@"
}
prepare() {
  local ws; ws=$(mktemp -d)
  if [ -d "$task/environment/files" ]; then cp -a "$task/environment/files/." "$ws/"; fi
  if [ -f "$task/environment/setup.sh" ]; then cp "$task/environment/setup.sh" /tmp/.setup.$$; run_box "$ws" --ro-bind /tmp/.setup.$$ /.setup.sh bash /.setup.sh >/dev/null; rm -f /tmp/.setup.$$; fi
  echo "$ws"
}
count() { /usr/bin/python3 -c "import re,sys; t=sys.stdin.read(); m=re.search(r'(\d+) passed',t); print(m.group(1) if m else 0)"; }
ws=$(prepare)
cp "$task/solution/solve.sh" /tmp/.solve.$$
run_box "$ws" --ro-bind /tmp/.solve.$$ /.solve.sh bash /.solve.sh > /tmp/.solve_out.$$ 2>&1 || { echo "solve.sh failed:"; tail -20 /tmp/.solve_out.$$; }
rm -f /tmp/.solve.$$ /tmp/.solve_out.$$
out=$(run_box "$ws" /usr/bin/python3 -I -c "import sys, pytest; sys.path.append('/app'); sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--rootdir=/tests', '/tests']))" 2>&1 || true)
passed=$(echo "$out" | count)
echo "$out" | tail -3
if echo "$out" | grep -qE "failed|error"; then echo "FAIL: oracle does not pass every test"; exit 1; fi
if [ -n "$expected" ] && [ "$passed" != "$expected" ]; then echo "FAIL: oracle passed $passed tests, task.toml expects $expected"; exit 1; fi
rm -rf "$ws"
ws=$(prepare)
out=$(run_box "$ws" /usr/bin/python3 -I -c "import sys, pytest; sys.path.append('/app'); sys.exit(pytest.main(['-q', '-p', 'no:cacheprovider', '--rootdir=/tests', '/tests']))" 2>&1 || true)
rm -rf "$ws"
if ! echo "$out" | grep -qE "failed|error"; then echo "FAIL: the untouched start state passes every test"; echo "$out" | tail -3; exit 1; fi
echo "OK: oracle passes $passed/$expected; start state fails"
