"""``coding-terminal-v0``: solve a programming or ops task in a shell; hidden tests decide."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from taskgym.core.env import TaskEnv
from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.core.task_layouts import step_dir
from taskgym.core.tool import Tool, ToolResult
from taskgym.domains.coding.oracle import solution_actions, solution_mount
from taskgym.domains.coding.steps import StepRun, prepare_step
from taskgym.domains.coding.verifier import verify_session
from taskgym.errors import ConfigError, TaskgymError
from taskgym.paths import cache_dir, staging_for
from taskgym.sandbox import Backend, SandboxSpec, Session
from taskgym.tools import shell_tools
from taskgym.tools.shell import SubmitArgs

__all__ = ["GENERATORS", "CodingEnv", "image_workspace", "prepare_workspace"]

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
        with staging_for(dest) as staging:
            session.export_workspace(staging)
    return dest


def image_workspace(backend: Backend, spec: SandboxSpec, seed: Path | None) -> Path:
    """The ``/app`` of the docker image of ``spec`` with ``seed`` copied over it, cached by
    image id and the content of ``seed``."""
    from taskgym.sandbox.docker import DockerBackend
    from taskgym.sandbox.docker.images import export_image_dir, folder_hash

    assert isinstance(backend, DockerBackend)
    tag = backend.image(spec)
    image_id = backend.client.images.get(tag).id.removeprefix("sha256:")[:24]
    seed_hash = folder_hash(seed) if seed is not None else "-"
    key = hashlib.sha256(f"{image_id}\0{seed_hash}".encode()).hexdigest()[:24]
    dest = cache_dir() / "image-workspaces" / key
    if dest.is_dir():
        return dest
    with staging_for(dest) as staging:
        if not export_image_dir(backend.client, tag, spec.workdir, staging):
            staging.mkdir()
        if seed is not None:
            shutil.copytree(seed, staging, symlinks=True, dirs_exist_ok=True)
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
    _step_run: StepRun | None = None
    """Where the episode is in a multi-step task (``None`` for a task of one step)."""

    def make_tools(self) -> list[Tool]:
        return [*shell_tools(lambda: self.session, self.command_timeout),
                Tool("submit", "Submit the workspace for grading by the hidden tests; ends the "
                     "episode (or, in a task of several steps, starts the next step).",
                     SubmitArgs, self._submit)]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, str], dict[str, Any]]:
        """As :meth:`TaskEnv.reset`; a multi-step task starts at its first step (its files
        copied in and its setup run; see :mod:`taskgym.domains.coding.steps`)."""
        obs, info = super().reset(seed=seed, options=options)
        assert self.task is not None
        self._step_run = None
        if self.task.steps:
            self._step_run = StepRun(self.task)
            problem = prepare_step(self.task, self._step_run.name, self.session,
                                   self.command_timeout())
            if problem is not None:
                raise ConfigError(f"{self.task.path}: {problem}")
            info["step_name"] = self._step_run.name
        return obs, info

    def _submit(self, _args: SubmitArgs) -> ToolResult:
        run = self._step_run
        if run is None or run.last:
            return ToolResult("submitted", done=True)
        assert self.task is not None
        try:
            result = verify_session(self.task, self.session, self.backend, step=run.name)
        except (TaskgymError, OSError) as exc:
            result = RewardResult.failed(f"grading step {run.name!r} failed: {exc}")
        run.results.append(result)
        graded = f"step {run.name!r} graded: {result.summary()}"
        run.ended = run.below_threshold(result)
        if run.ended is None:
            run.index += 1
            try:
                run.ended = prepare_step(self.task, run.name, self.session, self.command_timeout())
            except (TaskgymError, OSError) as exc:
                run.ended = f"step {run.name!r} could not be prepared: {exc}"
        if run.ended is not None:
            return ToolResult(f"{graded}\n[the task ends here: {run.ended}]", done=True)
        instruction = (step_dir(self.task.path, run.name) / "instruction.md").read_text()
        return ToolResult(f"{graded}\n\n# next step: {run.name}\n{instruction}",
                          info={"step_name": run.name, "step_reward": result.score})

    def workspace_seed(self, task: Task) -> Path | None:
        """:func:`prepare_workspace`; on the docker backend, a task image's own ``/app`` (what
        its Dockerfile put there: taskgym's workspace is a fresh folder over it) comes first,
        with ``environment/files`` copied over it."""
        seed = prepare_workspace(task, self.backend)
        image = self.container_image(task)
        if self.backend.name != "docker" or image is None or image == self.image:
            return seed
        return image_workspace(self.backend, self.sandbox_spec(task), seed)

    def verify(self, task: Task, session: Session) -> RewardResult:
        run = self._step_run
        if run is None or run.task is not task:
            return verify_session(task, session, self.backend)
        if run.ended is None:  # the last step was submitted, or the episode ran out mid-step
            run.results.append(verify_session(task, session, self.backend, step=run.name))
        return run.total()

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
        submit = {"tool": "submit", "args": {}}
        if task.steps:
            return [action for step in task.steps
                    for action in [*solution_actions(task, timeout, step), submit]]
        return [*solution_actions(task, timeout), submit]
