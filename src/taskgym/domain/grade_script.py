"""The host's end of an in-sandbox grader: run a domain's grading script on the final workspace.

:func:`grade_with_script` is what a domain's ``verify`` calls when grading runs code (the
agent's, or a library that reads the agent's files): a copy of the final workspace in a fresh
sandbox (:func:`taskgym.sandbox.grading.run_grader`), the script's folder read-only at
``/grader``, the task's hidden material handed over by descriptor, never as a file.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from taskgym.core.reward import RewardResult
from taskgym.core.sandboxed_grader import GraderResult, grader_outcome, grader_secret, grader_spec
from taskgym.sandbox.grading import run_grader
from taskgym.tools.view import VIEW_BINDS

if TYPE_CHECKING:
    from taskgym.core.env import TaskEnv
    from taskgym.core.task import Task
    from taskgym.sandbox import Session

__all__ = ["GRADER_MOUNT", "grade_with_script"]

R = TypeVar("R", bound=GraderResult)

GRADER_MOUNT = "/grader"
"""Where the grading script's folder is seen, read-only, in the grader's sandbox."""


def grade_with_script(env: TaskEnv, task: Task, session: Session, script: Path,
                      result: type[R], secret: Mapping[str, Any] | None = None,
                      files: Mapping[str, bytes] | None = None, *, min_memory_mb: int = 0
                      ) -> R | RewardResult:
    """Run ``python3 -I -B <script>`` on a copy of ``session``'s final workspace (``/app``) in
    a fresh sandbox bounded by ``task``'s limits (its memory at least ``min_memory_mb``), with
    taskgym's Python, the env's image and the grading kit (``gradekit``, at ``/.taskgym-view``).
    ``secret`` (JSON settings) and ``files`` (name -> bytes) reach the script as
    ``channel.secret`` (:func:`~taskgym.core.sandboxed_grader.grader_secret`). Returns the
    script's final record validated as ``result`` (a :class:`GraderResult` subclass), or the
    result of a grade that gave none: no verdict (it failed in its own setup, before
    ``started``), else a failed grade (it ran out of time, ended without its final record, or
    broke the kit's vocabulary)."""
    limits = task.limits
    spec = grader_spec(task, {str(script.parent.resolve()): GRADER_MOUNT, **VIEW_BINDS},
                       min_memory_mb=min_memory_mb, image=env.container_image(task))
    with tempfile.TemporaryDirectory(prefix="taskgym-grade-") as tmp:
        workspace = Path(tmp) / "app"
        session.export_workspace(workspace)
        run = run_grader(env.backend, spec, ["python3", "-I", "-B", f"{GRADER_MOUNT}/{script.name}"],
                         seed=workspace, timeout=limits.verifier_timeout_sec,
                         secrets=grader_secret(secret or {}, files))
    outcome = grader_outcome(run, result, timeout=limits.verifier_timeout_sec,
                             memory_mb=spec.memory_mb)
    if isinstance(outcome, RewardResult):
        return outcome
    record, _events = outcome
    return record
