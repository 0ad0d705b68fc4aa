"""Grading a game episode: the hidden GDScript check, run by the engine in a fresh sandbox.

The final workspace (the project) is copied into a new sandbox; ``inside/grade.py`` gets the
task's ``tests/check.gd`` by descriptor (it is never a file the agent's sandbox could see),
refuses projects that could run code before the harness, and runs the engine on the harness
with ``--fixed-fps``. The reward is 1 when every named check passed, else 0 (the fraction
that passed is a component).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from taskgym.core.grading import grader_report, grader_spec
from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.sandbox import Backend, Session
from taskgym.sandbox.grading import run_grader

__all__ = ["ENGINE", "INSIDE_DIR", "INSIDE_MOUNT", "grade_project"]

ENGINE = "godot3-server"
INSIDE_DIR = Path(__file__).parent / "inside"
"""Scripts that run inside sandboxes: the tools, the harness, the grader, the renderer."""
INSIDE_MOUNT = "/.game"
ENGINE_SECONDS = 20.0
"""Longest engine run while grading (an endless loop in _process is cut there)."""


def grade_project(task: Task, session: Session, backend: Backend, image: str | None) -> RewardResult:
    """Copy the final project out of ``session`` and run ``task``'s hidden check on it."""
    limits = task.limits
    secret = {
        "check": (task.path / "tests" / "check.gd").read_text(),
        "timeout": min(ENGINE_SECONDS, limits.verifier_timeout_sec - 5),
    }
    spec = grader_spec(task, {str(INSIDE_DIR): INSIDE_MOUNT}, image=image)
    with tempfile.TemporaryDirectory(prefix="taskgym-game-") as tmp:
        session.export_workspace(Path(tmp) / "app")
        run = run_grader(
            backend,
            spec,
            ["python3", "-I", "-B", f"{INSIDE_MOUNT}/grade.py"],
            seed=Path(tmp) / "app",
            timeout=limits.verifier_timeout_sec,
            secrets={"TASKGYM_SECRET_FD": json.dumps(secret).encode()},
        )
    record = grader_report(run, run.final(), limits.verifier_timeout_sec)
    if isinstance(record, RewardResult):
        return record
    common = {**run.costs(), "log": str(record.get("log", ""))}
    checks = record.get("checks")
    if not record.get("ok") or not isinstance(checks, list) or not checks:
        return RewardResult.failed(str(record.get("reason", "the check reported nothing")), **common)
    passed = [bool(c.get("passed")) for c in checks if isinstance(c, dict)]
    score = sum(passed) / len(checks)
    failed = [str(c.get("name")) for c in checks if isinstance(c, dict) and not c.get("passed")]
    details = {**common, "checks": checks}
    if failed:
        details["reason"] = "failed: " + "; ".join(failed)
    return RewardResult(
        score=0.0 if failed else 1.0, success=not failed, components={"checks_passed": score}, details=details
    )
