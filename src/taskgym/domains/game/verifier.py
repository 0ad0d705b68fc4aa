"""Grading a game episode: the hidden GDScript check, run by the engine in a fresh sandbox.

The final workspace (the project) is copied into a new sandbox; ``inside/grade.py`` gets the
task's ``tests/check.gd`` by descriptor (it is never a file the agent's sandbox could see),
builds the graded project from allow-listed files only (``inside/graded_project.py``) and runs the
engine on the harness with ``--fixed-fps``. The reward is 1 when every named check passed,
else 0 (the fraction that passed is a component).

What the agent sees of a grade is built here, never from text the engine wrote: the checks'
names, accepted only when the task's check source spells them (:func:`check_names`), their
results, and a fixed reason per cause (:data:`CAUSES`). The one exception is a refusal, which
``grade.py`` writes about the agent's own files before any project code has run. The engine's
log goes to this module's logger for humans, never into the result.

The grader announces its phases (:mod:`taskgym.core.verdicts`): a grade that ends in its own
setup, after ``begun`` (the engine probed, the check's source checked) and before ``started``
(the project read), has no verdict (``grader_dependency``, ``reference``, ``grader_timeout``,
``grader_crash``); a missing or unreadable check is the task's (``reference``) before any
sandbox starts. From ``started`` on, everything is graded: a refused project, an engine that
hangs or crashes on it. The final record is a :class:`GameResult`, read by
:func:`taskgym.core.sandboxed_grader.grader_outcome` (a malformed report is a failed grade).
"""

from __future__ import annotations

import logging
import re
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from taskgym.core.reward import RewardResult
from taskgym.core.sandboxed_grader import GraderResult, grader_outcome, grader_secret, grader_spec
from taskgym.core.settings import TaskSettings
from taskgym.core.task import Task
from taskgym.errors import ConfigError
from taskgym.sandbox import Backend, Session
from taskgym.sandbox.grading import run_grader
from taskgym.tools.view import VIEW_BINDS

__all__ = ["CAUSES", "ENGINE", "INSIDE_DIR", "INSIDE_MOUNT", "GameResult", "GameSettings", "check_names",
           "check_source", "grade_project"]

log = logging.getLogger(__name__)
ENGINE = "godot3-server"
INSIDE_DIR = Path(__file__).parent / "inside"
"""Scripts that run inside sandboxes: the tools, the harness, the grader, the renderer."""
INSIDE_MOUNT = "/.game"
ENGINE_SECONDS = 20.0
"""Longest engine run while grading (an endless loop in _process is cut there)."""
CAUSES = {
    "timeout": f"the engine ran past {ENGINE_SECONDS:g}s (an endless loop?) and was stopped",
    "no-report": "the engine ended without the check's report (a crash, or the scene quit it)",
    "bad-report": "the check's report was malformed or written twice",
    "no-scene": "the check's scene does not exist or does not load (run it with run_scene)",
    "audit": "a script overrides _get/_set/_notification or redefines an engine method or property",
    "world": "the tree was paused, time scaled, physics changed or a node's script swapped while playing",
    "harness": "the grader's harness failed",
    "names": "the check reported names its source does not declare",
}


class GameResult(GraderResult):
    """``grade.py``'s final record: the checks the harness reported (``gate``), else a
    ``cause``; the engine's log and the grade's seconds. Which names and causes reach the agent
    is :func:`grade_project`'s decision."""

    checks: list[Any] | None = None
    cause: str | None = None
    log: str = ""
    seconds: float = Field(default=0.0, ge=0.0)


STRING = re.compile(r'"((?:\\.|[^"\\\n])*)"')
NODE_CALL = re.compile(r'\bnode\(\s*root\s*,\s*"([^"]*)"\s*,\s*"([^"]*)"\s*\)')


def check_names(source: str) -> set[str]:
    """The check names a check's GDScript can report: its string literals, and "<path> is a
    <type>" for each ``node(root, "<path>", "<type>")`` (checklib's helper)."""
    names = {re.sub(r'\\(["\\])', r"\1", m.group(1)) for m in STRING.finditer(source)}
    return names | {f"{path} is a {kind}" for path, kind in NODE_CALL.findall(source)}


class GameSettings(TaskSettings):
    """The ``[game]`` table of a game task's task.toml."""

    table = "game"
    scripts: Literal["none", "logic"] = "logic"
    """``"none"``: no .gd file may be graded; ``"logic"``: scripts on the grader's allow-list."""


def check_source(task: Task) -> str:
    """The task's hidden check, ``tests/check.gd``; :class:`ConfigError` (the task's files:
    no verdict) when it is missing or not UTF-8 text."""
    path = task.path / "tests" / "check.gd"
    try:
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: the task's hidden check cannot be read ({exc}); fix the "
                          "task") from exc


def grade_project(task: Task, session: Session, backend: Backend, image: str | None) -> RewardResult:
    """Copy the final project out of ``session`` and run ``task``'s hidden check on it."""
    limits = task.limits
    source = check_source(task)
    secret = {
        "check": source,
        "timeout": min(ENGINE_SECONDS, limits.verifier_timeout_sec - 5),
        "scripts": GameSettings.of(task).scripts,
    }
    spec = grader_spec(task, {str(INSIDE_DIR): INSIDE_MOUNT, **VIEW_BINDS}, image=image)
    with tempfile.TemporaryDirectory(prefix="taskgym-game-") as tmp:
        session.export_workspace(Path(tmp) / "app")
        run = run_grader(
            backend,
            spec,
            ["python3", "-I", "-B", f"{INSIDE_MOUNT}/grade.py"],
            seed=Path(tmp) / "app",
            timeout=limits.verifier_timeout_sec,
            secrets=grader_secret(secret),
        )
    outcome = grader_outcome(run, GameResult, timeout=limits.verifier_timeout_sec,
                             memory_mb=limits.memory_mb)
    if isinstance(outcome, RewardResult):
        return outcome
    record = outcome[0]
    log.info("game grade of %s: engine log:\n%s", task.id, record.log[-4000:])
    costs = run.costs()
    checks = record.checks
    if record.cause == "refused":
        reason = str(record.reason or "")[:1000]
        return RewardResult.failed(f"the project was refused: {reason}", **costs)
    if not record.gate or not isinstance(checks, list) or not checks or len(checks) > 200:
        cause = str(record.cause)
        known = cause if cause in CAUSES else "none"
        return RewardResult.failed(CAUSES.get(cause, "the check reported nothing"), cause=known, **costs)
    allowed = check_names(source)
    shown: list[dict[str, object]] = []
    for c in checks:
        name = c.get("name") if isinstance(c, dict) else None
        if not isinstance(name, str) or name not in allowed or not isinstance(c.get("passed"), bool):
            return RewardResult.failed(CAUSES["names"], cause="names", **costs)
        shown.append({"name": name, "passed": c["passed"]})
    failed = [str(c["name"]) for c in shown if not c["passed"]]
    details: dict[str, object] = {**costs, "checks": shown}
    if failed:
        details["reason"] = "failed: " + "; ".join(failed)
    fraction = (len(shown) - len(failed)) / len(shown)
    return RewardResult(score=0.0 if failed else 1.0, success=not failed,
                        components={"checks_passed": fraction}, details=details)
