"""``coding-terminal-v0``: solve a programming or ops task in a shell; hidden tests decide."""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from taskgym.core.env import TaskEnv
from taskgym.core.paths import envs_dir
from taskgym.core.reward import RewardResult
from taskgym.core.task import (
    FolderTaskSet,
    GeneratedTaskSet,
    Task,
    TaskSet,
    cache_dir,
    source_version,
)
from taskgym.core.tool import Tool
from taskgym.domains.coding.oracle import solution_actions, solution_mount
from taskgym.domains.coding.verifier import verify_session
from taskgym.errors import ConfigError
from taskgym.sandbox import Backend, SandboxSpec, Session
from taskgym.tools import shell_tools, submit_tool

__all__ = ["GENERATORS", "CodingEnv", "generated_tasks", "prepare_workspace"]

ENV_ID = "coding-terminal-v0"
GENERATORS = ("mutation", "spec", "wrangling")


def generated_tasks(names: tuple[str, ...] = GENERATORS, size: int = 60) -> GeneratedTaskSet:
    """Seeded coding tasks from the named generators (all by default)."""
    gens = {}
    versions = {}
    for name in names:
        if name not in GENERATORS:
            raise ConfigError(f"unknown generator {name!r}; choose from {', '.join(GENERATORS)}")
        module = importlib.import_module(f"taskgym.domains.coding.generators.{name}")
        gens[name] = module.generate
        sources = sorted(Path(module.__file__ or "").parent.glob("*.py"))
        versions[name] = source_version(*sources)
    return GeneratedTaskSet(gens, "coding", versions, size=size)


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

    def default_tasks(self) -> TaskSet:
        return FolderTaskSet(envs_dir() / ENV_ID / "tasks", self.domain)

    def generated_tasks(self, names: tuple[str, ...]) -> TaskSet:
        return generated_tasks(names or GENERATORS)

    def make_tools(self) -> list[Tool]:
        def max_timeout() -> float:
            return max(1.0, min(self.episode_limits.command_timeout_sec, self.remaining_seconds()))

        return [*shell_tools(lambda: self.session, max_timeout),
                submit_tool("Submit the workspace for grading by the hidden tests; ends the "
                            "episode.")]

    def workspace_seed(self, task: Task) -> Path | None:
        return prepare_workspace(task, self.backend)

    def verify(self, task: Task, session: Session) -> RewardResult:
        return verify_session(task, session, self.backend)

    def sandbox_spec(self, task: Task) -> SandboxSpec:
        """The base spec plus an empty writable folder where the oracle puts the reference
        solution (``/solution`` for Harbor folders, ``/oracle`` for Terminal-Bench 1), as
        those harnesses do; it stays empty unless the oracle plays."""
        spec = super().sandbox_spec(task)
        return spec.model_copy(update={"writable_dirs": (*spec.writable_dirs,
                                                         solution_mount(task))})

    def container_image(self, task: Task) -> str | None:
        """The task's own Dockerfile folder (``environment/``, or the top of a Terminal-Bench 1
        folder), else Harbor's ``[environment] docker_image``, else :attr:`image`."""
        own = task.path if task.layout == "terminal-bench-1" else task.path / "environment"
        if (own / "Dockerfile").is_file():
            return str(own)
        environment = task.config.get("environment", {})
        named = environment.get("docker_image") if isinstance(environment, dict) else None
        return named if isinstance(named, str) and named else self.image

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        timeout = self.limits(task).command_timeout_sec
        return [*solution_actions(task, timeout), {"tool": "submit", "args": {}}]
