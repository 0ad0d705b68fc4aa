"""Grading a coding episode: hidden tests run against the agent's final workspace.

The agent's sandbox is stopped (every process killed) before this runs. Its workspace is
copied out and into a fresh sandbox built from the same read-only system; only then do the
hidden tests enter, read-only at /tests. The runner (``grader/runner.py``) reports over a
pipe tagged with a per-run nonce, which the agent never had a way to see.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
import threading
from pathlib import Path
from typing import Any

from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.errors import ConfigError
from taskgym.sandbox import Backend, SandboxSpec, Session
from taskgym.sandbox._reaper import runtime_root, session_name

__all__ = ["grade_workspace", "verify_session"]

GRADER_DIR = Path(__file__).parent / "grader"


def verify_session(task: Task, session: Session, backend: Backend) -> RewardResult:
    """Export the stopped session's workspace and grade it."""
    with tempfile.TemporaryDirectory(prefix=session_name() + "-", dir=runtime_root()) as tmp:
        final = Path(tmp) / "workspace"
        session.export_workspace(final)
        return grade_workspace(task, final, backend, image=session.spec.image)


def grade_workspace(task: Task, workspace: Path, backend: Backend,
                    image: str | None = None) -> RewardResult:
    """Run ``task``'s hidden tests against a copy of ``workspace`` in a fresh sandbox
    (of the container ``image`` the agent had, on a container backend)."""
    tests = task.path / "tests"
    if any(tests.glob("test_*.py")) or any(tests.glob("*_test.py")):
        mode = "pytest"
    elif (tests / "test.sh").is_file():
        mode = "script"
    else:
        raise ConfigError(f"{tests} has neither test_*.py files nor test.sh")
    limits = task.limits
    nonce = secrets.token_hex(16)
    nonce_r, nonce_w = os.pipe()
    os.write(nonce_w, nonce.encode())
    os.close(nonce_w)
    report_r, report_w = os.pipe()
    records: list[dict[str, Any]] = []
    reader = threading.Thread(target=_read_records, args=(report_r, nonce, records), daemon=True)
    reader.start()
    spec = SandboxSpec(
        memory_mb=limits.memory_mb, pids=limits.pids, disk_mb=limits.disk_mb,
        env={"TASKGYM_NONCE_FD": str(nonce_r), "TASKGYM_REPORT_FD": str(report_w),
             "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"},
        ro_binds={str(tests): "/tests", str(GRADER_DIR): "/.grader"},
        writable_dirs=("/logs",) if mode == "script" else (), image=image,
    )
    try:
        result, usage = backend.run(
            spec, ["/usr/bin/python3", "-I", "-B", "/.grader/runner.py", mode], seed=workspace,
            timeout=limits.verifier_timeout_sec, pass_fds=[nonce_r, report_w])
    finally:
        os.close(nonce_r)
        os.close(report_w)
        reader.join(timeout=10)
    log = (result.stdout + result.stderr)[-4000:]
    common = {"log": log, "verifier_seconds": round(result.duration_sec, 3),
              "verifier_cpu_seconds": round(usage.cpu_sec, 3)}
    final = next((r for r in records if r.get("final")), None)
    if result.timed_out:
        return RewardResult.failed(f"the tests ran past {limits.verifier_timeout_sec:g}s", **common)
    if final is None:
        return RewardResult.failed("the test run ended without its final report "
                                   "(the process was killed or exited early)", **common)
    if final.get("tampered"):
        return RewardResult.failed(f"the test harness was modified: {final['tampered']}", **common)
    if mode == "script":
        reward = final.get("reward")
        if not isinstance(reward, (int, float)):
            return RewardResult.failed("test.sh wrote no reward file", **common)
        score = min(1.0, max(0.0, float(reward)))
        return RewardResult(score=score, success=score >= 1.0, components={"reward": score},
                            details=common)
    return _score_pytest(task, records, final, common)


def _score_pytest(task: Task, records: list[dict[str, Any]], final: dict[str, Any],
                  common: dict[str, Any]) -> RewardResult:
    outcomes: dict[str, bool] = {}
    for record in records:
        if isinstance(record.get("test"), str) and record["test"] not in outcomes:
            outcomes[record["test"]] = record.get("passed") is True
    collected = next((r["collected"] for r in records if isinstance(r.get("collected"), int)), 0)
    expected = task.config.get("verifier", {}).get("expected_tests")
    total = expected if isinstance(expected, int) else collected
    passed = sum(outcomes.values())
    components = {"pass_fraction": passed / total if total else 0.0,
                  "tests_passed": float(passed), "tests_expected": float(total)}
    failing = sorted(name for name, ok in outcomes.items() if not ok)
    details = {**common, "failing": failing[:20], "exit_status": final.get("exit")}
    if total == 0:
        return RewardResult.failed("no tests were collected", **details)
    if collected != total or len(outcomes) != total:
        return RewardResult(
            score=0.0, success=False, gate=False, components=components,
            details={**details, "reason": f"expected {total} tests, collected {collected}, "
                                          f"ran {len(outcomes)}"})
    success = passed == total and final.get("exit") == 0
    return RewardResult(score=1.0 if success else 0.0, success=success, components=components,
                        details=details)


def _read_records(fd: int, nonce: str, records: list[dict[str, Any]]) -> None:
    prefix = nonce + " "
    with os.fdopen(fd, "r", errors="replace") as stream:
        for line in stream:
            if not line.startswith(prefix):
                continue
            try:
                record = json.loads(line[len(prefix):])
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict):
                records.append(record)
                if record.get("final"):
                    return
