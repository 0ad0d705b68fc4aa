"""Runs inside the grading sandbox (under the system's /usr/bin/python3 -I).

It speaks through the grading kit (``gradekit``, mounted at /.taskgym-view), which takes the
report channel before any code of the agent is imported (the nonce read, both descriptors
removed from the environment, the report's made non-inheritable, so test subprocesses never
see them) and reports ``begun``. Then its own setup (pytest imported, the hidden tests
checked or copied; a ``dependency`` or ``reference`` fault when that fails), then ``started``
before anything of the agent's is read or run (taskgym.core.verdicts: a grade that ends
between the two has no verdict).

Mode ``pytest``: run the hidden tests in /tests, one event per test (passed only when
setup, call and teardown all raised nothing), then the final record. Before the final
record it checks that pytest's own reporting functions (and the grading kit's) are the
objects they were at start, so code that monkey-patched them is caught. Mode ``script``
(Harbor): copy the tests from /.tests to a writable /tests, run /tests/test.sh (by its #!
line) in /app and report the reward file it writes (/logs/verifier/reward.json, else
reward.txt). Mode ``tb1`` (Terminal-Bench 1): the same copy (run-tests.sh included), run
/tests/run-tests.sh with TEST_DIR=/tests and report the pytest short summary it prints (run
with -rA).
"""

import inspect
import json
import math
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, "/.taskgym-view")  # the grading kit's folder (-I leaves it out)
import gradekit  # noqa: E402

sys.path.pop(0)  # nothing of taskgym's shadows the agent's modules


def run_pytest(channel):
    try:  # the grader's own setup: the agent's /app is on no path yet (python3 -I, cwd /)
        import _pytest.main
        import _pytest.python
        import _pytest.reports
        import _pytest.runner
        import pytest
    except ImportError as exc:
        channel.fault("dependency", f"the grading sandbox's Python cannot import pytest ({exc}): "
                      "install it for /usr/bin/python3 (`taskgym doctor` checks it)")
        return
    broken = broken_tests("/tests")
    if broken:
        channel.fault("reference", f"the task's hidden tests do not compile: {broken}")
        return

    guarded = {
        "CallInfo.from_call": (_pytest.runner.CallInfo, "from_call"),
        "call_runtest_hook": (_pytest.runner, "call_runtest_hook"),
        "call_and_report": (_pytest.runner, "call_and_report"),
        "runtestprotocol": (_pytest.runner, "runtestprotocol"),
        "TestReport.from_item_and_call": (_pytest.reports.TestReport, "from_item_and_call"),
        "Function.runtest": (_pytest.python.Function, "runtest"),
        "pytest_pyfunc_call": (_pytest.python, "pytest_pyfunc_call"),
        "pytest_runtest_setup": (_pytest.runner, "pytest_runtest_setup"),
        "pytest_runtest_call": (_pytest.runner, "pytest_runtest_call"),
        "pytest_runtest_teardown": (_pytest.runner, "pytest_runtest_teardown"),
        "pytest_runtestloop": (_pytest.main, "pytest_runtestloop"),
        "the report's send": (channel, "_send"),
        "the report's event": (channel, "event"),
        "the report's final record": (channel, "final"),
    }
    snapshot = {name: inspect.getattr_static(owner, attr) for name, (owner, attr) in guarded.items()}
    passed = {}
    called = set()

    class Reporter:
        @pytest.hookimpl(hookwrapper=True)
        def pytest_runtest_makereport(self, item, call):
            yield
            ok = call.excinfo is None
            passed[item.nodeid] = passed.get(item.nodeid, True) and ok
            if call.when == "call" and ok:
                called.add(item.nodeid)
            if call.when == "teardown":
                channel.event(test=item.nodeid, passed=passed[item.nodeid] and item.nodeid in called)

        def pytest_collection_finish(self, session):
            channel.event(collected=len(session.items))

    channel.started()  # from here on, what the agent left runs: its failures are graded
    sys.path.append("/app")
    os.chdir("/app")
    code = pytest.main(
        ["-q", "-p", "no:cacheprovider", "--rootdir=/tests", "--confcutdir=/tests",
         "-c", "/.grader/pytest.ini", "/tests"],
        plugins=[Reporter()],
    )
    tampered = sorted(name for name, (owner, attr) in guarded.items()
                      if inspect.getattr_static(owner, attr) is not snapshot[name])
    if sys.gettrace() is not None or sys.getprofile() is not None:
        tampered.append("a trace or profile hook")
    channel.final(True, exit=int(code), tampered=tampered)


def broken_tests(folder):
    """The first Python file of the hidden tests that does not compile, with why, else
    ``None`` (the task's fault, told apart from the agent's code failing to import)."""
    for root, _, names in sorted(os.walk(folder)):
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                try:
                    with open(path, "rb") as fh:
                        compile(fh.read(), path, "exec", dont_inherit=True)
                except (OSError, SyntaxError, ValueError) as exc:
                    return f"{path}: {exc}"
    return None


def writable_tests():
    """Copy the hidden tests from /.tests to the writable /tests (Harbor and Terminal-Bench
    copy them into the container, so a test script may move or write files there)."""
    shutil.copytree("/.tests", "/tests", symlinks=True, dirs_exist_ok=True)


def finite_number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def read_rewards():
    """Harbor's reward files: reward.json (a flat object of numbers) first, else reward.txt
    (one number). Returns (rewards, None) or (None, what is wrong)."""
    json_path, text_path = "/logs/verifier/reward.json", "/logs/verifier/reward.txt"
    if os.path.isfile(json_path):
        try:
            with open(json_path) as fh:
                rewards = json.load(fh)
        except (OSError, ValueError) as exc:
            return None, f"reward.json is not JSON ({exc})"
        if finite_number(rewards):
            return {"reward": rewards}, None
        if not isinstance(rewards, dict) or not rewards:
            return None, "reward.json must be an object of numbers"
        bad = sorted(str(k) for k, v in rewards.items() if not finite_number(v))
        if bad:
            return None, f"reward.json has values that are not finite numbers: {', '.join(bad)}"
        return rewards, None
    if os.path.isfile(text_path):
        try:
            with open(text_path) as fh:
                text = fh.read().strip()
            value = float(text)
        except (OSError, ValueError):
            return None, "reward.txt does not hold a number"
        if not math.isfinite(value):
            return None, f"reward.txt holds {text!r}, not a finite number"
        return {"reward": value}, None
    return None, "test.sh wrote no reward file (/logs/verifier/reward.txt or reward.json)"


def interpreter(path):
    """The command of the script's #! line, else bash."""
    with open(path, "rb") as fh:
        first = fh.readline(256).decode("utf-8", "replace").strip()
    if first.startswith("#!") and first[2:].strip():
        return first[2:].split()
    return ["/bin/bash"]


def setup_tests(channel):
    """The writable tests, then the ``started`` record; ``False`` (and why, reported) when the
    hidden tests cannot be copied."""
    try:
        writable_tests()
        os.makedirs("/logs/verifier", exist_ok=True)
    except OSError as exc:
        channel.fault("reference", f"the task's hidden tests could not be copied into /tests ({exc})")
        return False
    channel.started()
    return True


def run_script(channel):
    """Harbor: /tests/test.sh decides, through the reward file it writes."""
    if not setup_tests(channel):
        return
    for name in ("reward.txt", "reward.json"):
        try:
            os.unlink(os.path.join("/logs/verifier", name))
        except FileNotFoundError:
            pass
    try:  # Harbor executes the script: its #! line decides
        code = subprocess.call([*interpreter("/tests/test.sh"), "/tests/test.sh"], cwd="/app")
    except OSError as exc:
        print(f"cannot run /tests/test.sh: {exc}", file=sys.stderr)
        code = 127
    rewards, problem = read_rewards()
    channel.final(rewards is not None, problem, exit=code, rewards=rewards, tampered=[])


SUMMARY = re.compile(r"=+\s*short test summary info\s*=+", re.IGNORECASE)
PASSING = {"PASSED", "XFAIL", "SKIPPED"}
FAILING = {"FAILED", "XPASS", "ERROR"}


def parse_pytest_summary(output):
    """Terminal-Bench 1's pytest parser: every ``STATUS test`` line after the first
    ``short test summary info`` header. A test seen failing anywhere stays failed."""
    parts = SUMMARY.split(output, maxsplit=1)
    if len(parts) < 2:
        return None
    outcomes = {}
    for line in parts[1].splitlines():
        fields = line.split(maxsplit=1)
        if len(fields) < 2:
            continue
        status = fields[0].strip().strip(":")
        if status not in PASSING | FAILING:
            continue
        name = fields[1]
        if status == "FAILED" and " - " in name:
            name = " - ".join(name.split(" - ")[:-1])
        name = name.strip().split("::", 1)[-1]
        if name:
            outcomes[name] = outcomes.get(name, True) and status in PASSING
    return outcomes


def run_tb1(channel):
    """Terminal-Bench 1: run-tests.sh runs pytest with -rA; its summary decides."""
    if not setup_tests(channel):
        return
    env = dict(os.environ, TEST_DIR="/tests")
    proc = subprocess.run(["/bin/bash", "/tests/run-tests.sh"], cwd="/app", env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    output = proc.stdout.decode("utf-8", "replace")
    sys.stdout.write(output[-6000:])
    sys.stdout.flush()
    outcomes = parse_pytest_summary(output)
    channel.final(outcomes is not None, None if outcomes is not None else "run-tests.sh printed "
                  "no pytest short test summary (it must run pytest with -rA)",
                  exit=proc.returncode, outcomes=outcomes, tampered=[])


def main(channel):
    """The grade: ``begun`` is reported (the workspace is copied in; nothing of it is read
    before ``started``)."""
    os.chdir("/")
    mode = sys.argv[1:]
    if mode == ["script"]:
        run_script(channel)
    elif mode == ["tb1"]:
        run_tb1(channel)
    else:
        run_pytest(channel)


if __name__ == "__main__":
    gradekit.run(main)
