"""Grading a coding episode: hidden tests run against the agent's final workspace.

The agent's sandbox is stopped (every process killed) before this runs. Its workspace is
copied out and into a fresh sandbox built from the same read-only system; only then do the
hidden tests enter at /tests: read-only for taskgym's per-test pytest run, a writable copy
for Harbor's test.sh and Terminal-Bench 1's run-tests.sh (which may move files there). The
runner (``grader/runner.py``) runs through the shared grading runner
(:func:`taskgym.sandbox.grading.run_grader`) and speaks the grading kit's vocabulary
(nonce-tagged records, a nonce the agent never had a way to see): an event per test, then a
:class:`CodingResult`, read by :func:`taskgym.core.sandboxed_grader.grader_outcome`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from taskgym.core.reward import RewardResult
from taskgym.core.sandboxed_grader import GraderResult, grader_outcome
from taskgym.core.settings import VerifierSettings
from taskgym.core.task import Task
from taskgym.domains.coding.task_steps import copy_tests
from taskgym.errors import ConfigError
from taskgym.sandbox import Backend, Session, scratch_dir
from taskgym.sandbox.grading import run_grader
from taskgym.tools.view import VIEW_BINDS

__all__ = ["CodingResult", "TestEvent", "grade_workspace", "grader_mode", "verify_session"]

GRADER_DIR = Path(__file__).parent / "grader"


class TestEvent(BaseModel):
    """An event of the pytest run: the tests collected, or one test's outcome."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    collected: int | None = Field(default=None, ge=0)
    test: str | None = None
    passed: bool | None = None


class CodingResult(GraderResult):
    """The runner's final record: pytest's exit status and what the tamper check found; the
    reward file's values (Harbor) or the summary's outcomes (Terminal-Bench 1)."""

    exit: int
    tampered: list[str]
    rewards: dict[str, float] | None = None
    outcomes: dict[str, bool] | None = None


def verify_session(task: Task, session: Session, backend: Backend,
                   step: str | None = None) -> RewardResult:
    """Export the session's workspace and grade it (against ``step``'s tests, for a step of
    a multi-step task). The session is stopped, except between the steps of a multi-step
    task, whose grading takes a copy while the agent's processes still run, as Harbor's
    does; the tests still run in their own fresh sandbox."""
    with scratch_dir() as tmp:
        final = Path(tmp) / "workspace"
        session.export_workspace(final)
        return grade_workspace(task, final, backend, image=session.spec.image, step=step)


def grader_mode(task: Task) -> str:
    """How ``task`` is graded: ``"tb1"`` (Terminal-Bench 1's run-tests.sh and its pytest
    summary), ``"script"`` (Harbor's tests/test.sh and the reward file it writes) or
    ``"pytest"`` (taskgym's per-test run of tests/test_*.py).

    A Harbor folder with tests/test.sh is graded by it, as Harbor does; ``[verifier] grader =
    "pytest"`` in task.toml chooses the per-test run instead (``"test.sh"`` forces the script).
    """
    if task.layout == "terminal-bench-1":
        return "tb1"
    if task.steps:
        return "script"  # Harbor's steps are graded by their test.sh, or the shared one
    tests = task.path / "tests"
    has_script = (tests / "test.sh").is_file()
    has_pytest = any(tests.glob("test_*.py")) or any(tests.glob("*_test.py"))
    choice = VerifierSettings.of(task).grader
    if choice is None:
        choice = "test.sh" if has_script else "pytest"
    if choice == "test.sh":
        if not has_script:
            raise ConfigError(f"{tests} has no test.sh, which [verifier] grader = \"test.sh\" "
                              "asks for")
        return "script"
    if choice == "pytest":
        if not has_pytest:
            raise ConfigError(f"{tests} has no test_*.py files"
                              + (" (use its test.sh: drop [verifier] grader)" if has_script
                                 else " and no test.sh"))
    return "pytest"


def grade_workspace(task: Task, workspace: Path, backend: Backend,
                    image: str | None = None, step: str | None = None) -> RewardResult:
    """Run ``task``'s hidden tests against a copy of ``workspace`` in a fresh sandbox
    (of the container ``image`` the agent had, on a container backend). For ``step`` of a
    multi-step task, /tests holds tests/ with steps/<step>/tests/ copied over it, as in
    Harbor, so the step's own test.sh, when it has one, is /tests/test.sh."""
    mode = grader_mode(task)
    with scratch_dir() as staging:
        tests = task.path / "tests"
        if mode != "pytest":  # the runner copies these into a writable /tests
            tests = copy_tests(task, Path(staging) / "tests", step)
        return _run_grader(task, mode, tests, workspace, backend, image)


def _run_grader(task: Task, mode: str, tests: Path, workspace: Path, backend: Backend,
                image: str | None) -> RewardResult:
    limits = task.limits
    writable: tuple[str, ...] = ()
    if mode == "pytest":
        binds, tmp_mb = {str(tests): "/tests"}, 256
    else:
        size_mb = sum(p.stat().st_size for p in tests.rglob("*") if p.is_file()) >> 20
        binds, writable, tmp_mb = {str(tests): "/.tests"}, ("/tests", "/logs"), 256 + 2 * size_mb
    spec = limits.sandbox_spec(
        tmp_mb=tmp_mb,
        env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1"},
        ro_binds={**binds, str(GRADER_DIR): "/.grader", **VIEW_BINDS}, writable_dirs=writable,
        image=image,
    )
    run = run_grader(backend, spec, ["/usr/bin/python3", "-I", "-B", "/.grader/runner.py", mode],
                     seed=workspace, timeout=limits.verifier_timeout_sec)
    common = {"log": run.log(), **run.costs(), "grader": mode}
    outcome = grader_outcome(run, CodingResult, event=TestEvent, exit_code=True,
                             timeout=limits.verifier_timeout_sec, memory_mb=limits.memory_mb)
    if isinstance(outcome, RewardResult):
        if outcome.graded and run.result.timed_out:
            return RewardResult.failed(f"the tests ran past {limits.verifier_timeout_sec:g}s",
                                       **common)
        return outcome if not outcome.graded else RewardResult.failed(
            str(outcome.details.get("reason")), **common)
    final, events = outcome
    if run.result.timed_out:
        return RewardResult.failed(f"the tests ran past {limits.verifier_timeout_sec:g}s", **common)
    if final.tampered:
        return RewardResult.failed(f"the test harness was modified: {final.tampered}", **common)
    if mode == "script":
        return _score_rewards(final, common)
    if mode == "tb1":
        return _score_summary(final, common)
    return _score_pytest(task, events, final, common)


def _score_rewards(final: CodingResult, common: dict[str, Any]) -> RewardResult:
    """Harbor's reward file: the ``reward`` key (or the only key) is the score."""
    if final.rewards is None:
        return RewardResult.failed(str(final.reason or "no reward file"), **common)
    return RewardResult.from_rewards(final.rewards, **common, exit_status=final.exit)


def _score_summary(final: CodingResult, common: dict[str, Any]) -> RewardResult:
    """Terminal-Bench 1: resolved when every test in the pytest summary passed (and there
    is at least one: Terminal-Bench 1 counts an empty summary as resolved, taskgym does not)."""
    outcomes = final.outcomes
    if outcomes is None:
        return RewardResult.failed("run-tests.sh printed no pytest short test summary (it must "
                                   "run pytest with -rA)", **common)
    if not outcomes:
        return RewardResult.failed("the pytest short test summary lists no tests", **common)
    passed = sum(1 for ok in outcomes.values() if ok)
    failing = sorted(name for name, ok in outcomes.items() if not ok)
    success = not failing
    components = {"pass_fraction": passed / len(outcomes), "tests_passed": float(passed),
                  "tests_expected": float(len(outcomes))}
    return RewardResult(score=1.0 if success else 0.0, success=success, components=components,
                        details={**common, "failing": failing[:20], "exit_status": final.exit})


def _score_pytest(task: Task, events: list[TestEvent], final: CodingResult,
                  common: dict[str, Any]) -> RewardResult:
    outcomes: dict[str, bool] = {}
    for event in events:
        if event.test is not None and event.test not in outcomes:
            outcomes[event.test] = event.passed is True
    collected = next((e.collected for e in events if e.collected is not None), 0)
    expected = VerifierSettings.of(task).expected_tests
    total = expected if expected is not None else collected
    passed = sum(outcomes.values())
    components = {"pass_fraction": passed / total if total else 0.0,
                  "tests_passed": float(passed), "tests_expected": float(total)}
    failing = sorted(name for name, ok in outcomes.items() if not ok)
    details = {**common, "failing": failing[:20], "exit_status": final.exit}
    if total == 0:
        return RewardResult.failed("no tests were collected", **details)
    if collected != total or len(outcomes) != total:
        return RewardResult(
            score=0.0, success=False, gate=False, components=components,
            details={**details, "reason": f"expected {total} tests, collected {collected}, "
                                          f"ran {len(outcomes)}"})
    success = passed == total and final.exit == 0
    return RewardResult(score=1.0 if success else 0.0, success=success, components=components,
                        details=details)
