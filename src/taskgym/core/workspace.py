"""A task's start state in the sandbox: its container image and the files of its workspace.

* The image (:func:`task_image`): the task folder's own Dockerfile folder (``environment/``, or
  the top of a Terminal-Bench 1 folder), else Harbor's ``[environment] docker_image``, else
  the env's image.
* The workspace (:func:`prepare_workspace`): ``environment/files``, after
  ``environment/setup.sh`` when the task has one (run once in a sandbox like the agent's,
  its result cached); on a backend that runs images, a task image's own working folder comes
  first (:meth:`Backend.image_workspace <taskgym.sandbox.base.Backend.image_workspace>`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from taskgym.core.task import Task
from taskgym.core.task_layouts import TERMINAL_BENCH_1
from taskgym.errors import ConfigError
from taskgym.paths import cache_dir, staging_for
from taskgym.sandbox import Backend, SandboxSpec

__all__ = ["prepare_workspace", "task_image", "task_workspace"]


def task_image(task: Task, default: str | None) -> str | None:
    """The container ``task`` runs in: a folder holding its Dockerfile, or an image name."""
    own = task.path if task.layout == TERMINAL_BENCH_1 else task.path / "environment"
    if (own / "Dockerfile").is_file():
        return str(own)
    environment = task.config.get("environment", {})
    named = environment.get("docker_image") if isinstance(environment, dict) else None
    return named if isinstance(named, str) and named else default


def task_workspace(task: Task, backend: Backend, spec: SandboxSpec,
                   env_image: str | None) -> Path | None:
    """:func:`prepare_workspace`; when the task has an image of its own (not ``env_image``)
    and the backend runs images (docker), that image's working folder (what its Dockerfile put
    there: taskgym's workspace is a fresh folder over it) comes first, with the prepared files
    copied over it (:meth:`~taskgym.sandbox.base.Backend.image_workspace`)."""
    seed = prepare_workspace(task, backend)
    if spec.image is None or spec.image == env_image:
        return seed
    return backend.image_workspace(spec, seed) or seed


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
