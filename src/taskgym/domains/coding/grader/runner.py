"""Runs inside the grading sandbox (under the system's /usr/bin/python3 -I).

It takes the report channel before any code of the agent is imported: a random nonce
read from one pipe and a second pipe to write records to, both removed from the
environment and made non-inheritable, so test subprocesses never see them. Each record
is one line, ``<nonce> <json>``; the host ignores lines without the nonce.

Mode ``pytest``: run the hidden tests in /tests, one record per test (passed only when
setup, call and teardown all raised nothing), then a final record. Before the final
record it checks that pytest's own reporting functions are the objects they were at
start, so code that monkey-patched them is caught. Mode ``script``: run /tests/test.sh
(Harbor layout) and report the reward file it writes.
"""

import inspect
import json
import os
import subprocess
import sys


def make_undumpable():
    """Stop processes the tests start (same uid) from reading this one's memory."""
    import ctypes

    PR_SET_DUMPABLE = 4
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def open_channel():
    nonce_fd = int(os.environ.pop("TASKGYM_NONCE_FD"))
    report_fd = int(os.environ.pop("TASKGYM_REPORT_FD"))
    nonce = os.read(nonce_fd, 256).decode().strip()
    os.close(nonce_fd)
    os.set_inheritable(report_fd, False)
    stream = os.fdopen(report_fd, "w", buffering=1)

    def send(**record):
        stream.write(nonce + " " + json.dumps(record) + "\n")
        stream.flush()

    return send


def run_pytest(send):
    import _pytest.main
    import _pytest.python
    import _pytest.reports
    import _pytest.runner
    import pytest

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
                send(test=item.nodeid, passed=passed[item.nodeid] and item.nodeid in called)

        def pytest_collection_finish(self, session):
            send(collected=len(session.items))

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
    send(final=True, exit=int(code), tampered=tampered)


def run_script(send):
    os.makedirs("/logs/verifier", exist_ok=True)
    for name in ("reward.txt", "reward.json"):
        try:
            os.unlink(os.path.join("/logs/verifier", name))
        except FileNotFoundError:
            pass
    code = subprocess.call(["/bin/bash", "/tests/test.sh"], cwd="/app")
    reward = None
    try:
        with open("/logs/verifier/reward.txt") as fh:
            reward = float(fh.read().strip())
    except (OSError, ValueError):
        try:
            with open("/logs/verifier/reward.json") as fh:
                reward = float(json.load(fh)["reward"])
        except (OSError, ValueError, KeyError, TypeError):
            reward = None
    send(final=True, exit=code, reward=reward, tampered=[])


def main():
    make_undumpable()
    send = open_channel()
    if sys.argv[1:] == ["script"]:
        run_script(send)
    else:
        run_pytest(send)


if __name__ == "__main__":
    main()
