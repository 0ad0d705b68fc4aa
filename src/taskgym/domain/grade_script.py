"""The host's end of an in-sandbox grader: run a domain's grading script on the final workspace.

:func:`grade_with_script` is what a domain's ``verify`` calls when grading runs code (the
agent's, or a library that reads the agent's files): a copy of the final workspace in a fresh
sandbox (:func:`taskgym.sandbox.grading.run_grader`), the script's folder read-only at
``/grader``, the task's hidden material handed over by descriptor, never as a file.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskgym.core.reward import RewardResult
from taskgym.core.sandboxed_grader import grader_report, grader_spec
from taskgym.sandbox.grading import run_grader

if TYPE_CHECKING:
    from taskgym.core.env import TaskEnv
    from taskgym.core.task import Task
    from taskgym.sandbox import Session

__all__ = ["GRADER_MOUNT", "grade_with_script"]

GRADER_MOUNT = "/grader"
"""Where the grading script's folder is seen, read-only, in the grader's sandbox."""


def grade_with_script(env: TaskEnv, task: Task, session: Session, script: Path,
                      secret: Any = None, *, min_memory_mb: int = 0
                      ) -> dict[str, Any] | RewardResult:
    """Run ``python3 -I -B <script>`` on a copy of ``session``'s final workspace (``/app``) in
    a fresh sandbox bounded by ``task``'s limits (its memory at least ``min_memory_mb``), with
    taskgym's Python and the env's image. ``secret`` (JSON) is on the descriptor named by
    ``TASKGYM_SECRET_FD``. Returns the script's final report (its first record with
    ``"final": true``), or the result of a grade that gave none: failed (it ran out of time,
    or ended without the record), or no verdict (it failed before it reported
    ``{"phase": "started"}``)."""
    limits = task.limits
    spec = grader_spec(task, {str(script.parent.resolve()): GRADER_MOUNT},
                       min_memory_mb=min_memory_mb, image=env.container_image(task))
    secrets = {"TASKGYM_SECRET_FD": json.dumps(secret).encode()} if secret is not None else None
    with tempfile.TemporaryDirectory(prefix="taskgym-grade-") as tmp:
        workspace = Path(tmp) / "app"
        session.export_workspace(workspace)
        run = run_grader(env.backend, spec, ["python3", "-I", "-B", f"{GRADER_MOUNT}/{script.name}"],
                         seed=workspace, timeout=limits.verifier_timeout_sec, secrets=secrets)
    return grader_report(run, run.final(), limits.verifier_timeout_sec)
