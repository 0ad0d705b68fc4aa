"""``coding-terminal-v0``: solve a programming or ops task in a shell; hidden tests decide."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from taskgym.core.env import TaskEnv
from taskgym.core.reward import RewardResult
from taskgym.core.task import (
    Task,
    cache_dir,
)
from taskgym.core.tool import Tool
from taskgym.domains.coding.verifier import verify_session
from taskgym.errors import ConfigError
from taskgym.sandbox import Backend, SandboxSpec, Session
from taskgym.tools import shell_tools, submit_tool

__all__ = ["GENERATORS", "CodingEnv", "prepare_workspace"]

ENV_ID = "coding-terminal-v0"
GENERATORS = ("mutation", "spec", "wrangling")


def prepare_workspace(task: Task, backend: Backend) -> Path | None:
    """The task's start state: ``environment/files``, after ``environment/setup.sh`` if any.

    A setup script runs once, in a sandbox like the agent's; its result is cached by a
    hash of the environment folder.
    """
    environment = task.path / "environment"
    files = environment / "files"
    setup = environment / "setup.sh"
    if not setup.is_file():
        return files if files.is_dir() else None
    digest = hashlib.sha256()
    for path in sorted(environment.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(environment)).encode() + b"\0" + path.read_bytes())
    dest = cache_dir() / "prepared" / digest.hexdigest()[:24]
    if dest.is_dir():
        return dest
    spec = SandboxSpec(ro_binds={str(environment): "/.setup"}, memory_mb=task.limits.memory_mb)
    with backend.start(spec, files if files.is_dir() else None) as session:
        result = session.exec("bash /.setup/setup.sh", timeout=600)
        if result.exit_code != 0:
            raise ConfigError(f"{setup} failed with exit code {result.exit_code}:\n"
                              f"{result.stderr[-2000:] or result.stdout[-2000:]}")
        session.stop()
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".prep-"))
        try:
            session.export_workspace(tmp / "ws")
            try:
                os.rename(tmp / "ws", dest)
            except OSError:
                if not dest.is_dir():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


class CodingEnv(TaskEnv):
    """A shell in a sandbox with the task's files in /app; ``submit`` runs the hidden tests.

    ``tasks`` may also be ``"curated"`` (the default), ``"generated"`` (every generator)
    or ``"generated:<name>"`` (one of :data:`GENERATORS`).
    """

    domain = "coding"
    image = f"taskgym/{ENV_ID}"
    description = "Solve a programming or ops task in a sandboxed shell; hidden tests decide."
    curated = f"{ENV_ID}/tasks"
    generators = GENERATORS
    generate = "taskgym.domains.coding.generators:generate"
    generated_size = 60

    def make_tools(self) -> list[Tool]:
        return [*shell_tools(lambda: self.session, self.command_timeout),
                submit_tool("Submit the workspace for grading by the hidden tests; ends the "
                            "episode.")]

    def workspace_seed(self, task: Task) -> Path | None:
        return prepare_workspace(task, self.backend)

    def verify(self, task: Task, session: Session) -> RewardResult:
        return verify_session(task, session, self.backend)

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        script = (task.path / "solution" / "solve.sh").read_text()
        delimiter = "TASKGYM_SOLUTION"
        while delimiter in script:
            delimiter += "_"
        command = (f"cat > /tmp/.solve.sh <<'{delimiter}'\n{script}\n{delimiter}\n"
                   "bash /tmp/.solve.sh")
        timeout = self.limits(task).command_timeout_sec
        return [{"tool": "bash", "args": {"command": command, "timeout": timeout}},
                {"tool": "submit", "args": {}}]
