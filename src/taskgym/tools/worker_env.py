"""The base of the domains whose tools talk to an episode's warm worker (CAD, mesh).

:class:`WorkerEnv` is a :class:`~taskgym.core.env.TaskEnv` that gives every sandbox the domain's
in-sandbox scripts and the shared ones (:data:`~taskgym.tools.view.VIEW_BINDS`), starts the
worker (:class:`~taskgym.tools.worker.WarmWorker`) at reset, before the agent acts, and offers
the tools the pieces they share: a call bounded by the task's settings
(:class:`WorkerSettings`), saving and running the agent's code, a render's image, and the error
of a missing argument. A domain declares data: where its scripts are, its settings model, the
text its instructions end with and what the agent reads once the worker is gone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, Field

from taskgym.core.env import TaskEnv
from taskgym.core.settings import TaskSettings
from taskgym.core.task import Task
from taskgym.core.tool import ToolResult
from taskgym.sandbox import SandboxSpec
from taskgym.tools.view import VIEW_BINDS
from taskgym.tools.worker import WarmWorker, image_result, reply_result

__all__ = ["WorkerEnv", "WorkerSettings", "missing"]


class WorkerSettings(TaskSettings):
    """The keys every worker domain's table has: the bounds of one run of the agent's code."""

    run_timeout_sec: float = Field(default=60.0, gt=0)
    """Longest run of the agent's code (in the worker, and when grading)."""
    run_memory_mb: int = Field(default=1024, ge=64)
    """Memory the agent's code may allocate beyond the warm interpreter."""


class WorkerEnv(TaskEnv):
    """A domain with a warm worker: ``<mount>/worker.py start`` at reset, whose server leaves
    its key in ``/app/.<domain>-key`` and its two FIFOs beside it (the domain's ``worker.py``
    uses the same path)."""

    inside: ClassVar[Path]
    """The domain's in-sandbox scripts (``worker.py``, its grader), read-only in its sandboxes."""
    mount: ClassVar[str]
    """Where sandboxes see :attr:`inside`."""
    settings: ClassVar[type[WorkerSettings]]
    convention: ClassVar[str] = ""
    """Appended to every instruction: how the tools work. ``{key}`` is the task's setting."""
    worker_gone: ClassVar[str]
    """The observation of a worker tool once the worker is not running."""
    worker_start_sec: ClassVar[float] = 120.0
    """How long a request may wait beyond its own timeout (the server's first imports)."""
    min_memory_mb: ClassVar[int] = 2048
    """The agent's sandbox has at least this much memory (the worker's interpreter in it)."""
    measure_needs: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    """For :meth:`measure`: the arguments each ``query`` needs."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        domain = self.domain
        self.worker = WarmWorker(f"{self.mount}/worker.py", f".{domain}-key", self.worker_gone,
                                 self.worker_start_sec)
        super().__init__(*args, **kwargs)

    def sandbox_spec(self, task: Task) -> SandboxSpec:
        spec = super().sandbox_spec(task)
        return spec.model_copy(update={
            "memory_mb": max(spec.memory_mb, self.min_memory_mb), "host_python": True,
            "ro_binds": {**spec.ro_binds, str(self.inside): self.mount, **VIEW_BINDS}})

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, str], dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        assert self.task is not None
        self.worker.start(self.session)  # before the agent acts: only the env holds its key
        convention = self.convention.format_map(self.task_settings().model_dump())
        return {"text": obs["text"] + convention}, info

    def resume_episode(self, *args: Any, **kwargs: Any) -> None:
        """A restored or forked episode's sandbox runs no worker (no process is carried, and the
        channel was its old session's): start its own, before the agent acts again."""
        super().resume_episode(*args, **kwargs)
        self.worker.start(self.session)

    def task_settings(self) -> WorkerSettings:
        """The running task's settings."""
        assert self.task is not None
        return self.settings.of(self.task)

    def call_worker(self, op: str, timeout: float | None = None, **request: Any) -> dict[str, Any]:
        """The worker's reply to ``op`` with ``request``, run within the task's memory bound
        and ``timeout`` seconds (by default its ``run_timeout_sec``)."""
        settings = self.task_settings()
        request.update(op=op, memory_mb=settings.run_memory_mb)
        return self.worker.call(self.session, request, timeout or settings.run_timeout_sec,
                                self.remaining_seconds)

    def save(self, name: str, code: str | None) -> None:
        """Write the agent's ``code`` (when given) to the workspace file ``name``."""
        if code is not None:
            self.session.write_file(name, code.encode("utf-8", "surrogateescape"))

    def run_file(self, name: str, code: str | None) -> ToolResult:
        """Save ``code`` (when given) as ``name`` and run that file in the worker."""
        self.save(name, code)
        return reply_result(self.call_worker("run", path=f"/app/{name}"), run=True)

    def measure(self, args: BaseModel) -> ToolResult:
        """A ``measure`` tool: the worker's answer to ``args`` (a ``query`` and what it needs, as
        :attr:`measure_needs` says), or the error naming a missing argument."""
        request = args.model_dump(exclude_none=True)
        error = missing(args, f"measure {request['query']!r}", self.measure_needs.get(request["query"], ()))
        return error or reply_result(self.call_worker("measure", 120, **request))

    def worker_image(self, **request: Any) -> ToolResult:
        """The worker's render of ``request``, its PNG attached."""
        return image_result(self.session, self.call_worker("render", 120, **request))


def missing(args: BaseModel, what: str, keys: Sequence[str]) -> ToolResult | None:
    """The error observation when any of ``keys``, which ``what`` needs, is not in ``args``."""
    absent = [key for key in keys if getattr(args, key) is None]
    if not absent:
        return None
    message = f"{what} needs {' and '.join(f'`{key}`' for key in absent)}"
    return ToolResult(f"error: {message}", error=message)
