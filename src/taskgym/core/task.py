"""Tasks and task sets.

A :class:`Task` is one problem instance, read from a task folder (Harbor / Terminal-Bench 2
layout: ``instruction.md``, ``task.toml``, ``environment/``, ``solution/``, ``tests/``; or
Terminal-Bench 1: ``task.yaml``, ``solution.sh``, ``run-tests.sh``, ``tests/``; see
:mod:`taskgym.core.task_layouts`).
A :class:`TaskSet` is an indexable collection: a folder of task folders
(:class:`FolderTaskSet`) or seeded generators (:class:`GeneratedTaskSet`), whose tasks
are written to a cache folder in the same layout, so every task is a folder.
"""

from __future__ import annotations

import abc
import difflib
import hashlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taskgym.core.task_layouts import folder_layout, read_folder, refusal
from taskgym.errors import ConfigError, TaskNotFoundError
from taskgym.paths import cache_dir, staging_for
from taskgym.sandbox import SandboxSpec

__all__ = [
    "FolderTaskSet",
    "GeneratedTaskSet",
    "Generator",
    "Limits",
    "Task",
    "TaskSet",
    "load_task",
]

_log = logging.getLogger(__name__)


class Limits(BaseModel):
    """Budgets of one episode; task.toml sets them, the env may override."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_steps: int = Field(default=50, ge=1)
    """Tool calls before the episode is truncated and graded."""
    timeout_sec: float = Field(default=1800.0, gt=0)
    """Wall-clock budget of the agent's episode."""
    command_timeout_sec: float = Field(default=120.0, gt=0)
    """Longest single tool call."""
    verifier_timeout_sec: float = Field(default=300.0, gt=0)
    """Longest grading run."""
    memory_mb: int = Field(default=1024, ge=16)
    pids: int = Field(default=256, ge=8)
    disk_mb: int = Field(default=512, ge=1)
    cpus: float = Field(default=1.0, gt=0)

    def sandbox_spec(self, **fields: Any) -> SandboxSpec:
        """A sandbox bounded by these limits (memory, processes, CPUs, disk, one command's
        time), with ``fields`` set on top: the one place a task's limits become a
        :class:`~taskgym.sandbox.SandboxSpec` (the agent's sandbox and every grader's)."""
        bounds = {"memory_mb": self.memory_mb, "pids": self.pids, "cpus": self.cpus,
                  "disk_mb": self.disk_mb, "command_timeout_sec": self.command_timeout_sec}
        return SandboxSpec(**{**bounds, **fields})


class Task(BaseModel):
    """One problem instance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    domain: str
    instruction: str
    path: Path
    """The task folder."""
    layout: Literal["harbor", "terminal-bench-1"] = "harbor"
    """Which folder layout the task was read from (Harbor / Terminal-Bench 2, or 1)."""
    steps: tuple[str, ...] = ()
    """A multi-step Harbor task's step names, in order (``instruction`` is the first's)."""
    difficulty: str = "medium"
    category: str = ""
    tags: tuple[str, ...] = ()
    limits: Limits = Limits()
    config: Mapping[str, Any] = Field(default_factory=dict)
    """The whole parsed task.toml (task.yaml for Terminal-Bench 1), for the domain's own keys."""


def load_task(path: Path | str, domain: str, task_id: str | None = None) -> Task:
    """Read a task folder (either layout of :mod:`taskgym.core.task_layouts`); raises
    :class:`ConfigError` naming what is wrong."""
    path = Path(path).resolve()
    fields = read_folder(path)
    try:
        return Task(id=task_id or path.name, domain=domain, path=path,
                    **{**fields, "limits": Limits(**fields["limits"])})
    except ValueError as exc:
        source = path / ("task.yaml" if fields.get("layout") == "terminal-bench-1" else "task.toml")
        raise ConfigError(f"{source}: {exc}") from exc


class TaskSet(abc.ABC):
    """An indexable collection of tasks of one domain."""

    domain: str

    @abc.abstractmethod
    def get(self, task_id: str) -> Task:
        """The task called ``task_id``; :class:`TaskNotFoundError` if there is none."""

    @abc.abstractmethod
    def pick(self, seed: int) -> Task:
        """The task for ``seed`` (deterministic; seeds 0..len-1 cover a finite set)."""

    @abc.abstractmethod
    def __len__(self) -> int:
        """Number of tasks; generated sets report how many seeds they cover."""

    @abc.abstractmethod
    def ids(self) -> list[str]:
        """The ids of the tasks seeds ``0..len-1`` pick, in that order, without loading them."""

    def __iter__(self) -> Iterator[Task]:
        return (self.pick(i) for i in range(len(self)))


class FolderTaskSet(TaskSet):
    """Task folders under one folder (or one task folder by itself), sorted by name.

    Folders taskgym cannot play (see :func:`~taskgym.core.task_layouts.refusal`) are left
    out with a logged warning and listed in :attr:`refused`; :meth:`get` on one raises why.
    """

    def __init__(self, root: Path | str, domain: str) -> None:
        self.root = Path(root).expanduser().resolve()
        self.domain = domain
        if not self.root.is_dir():
            raise ConfigError(f"task folder {self.root} does not exist")
        if folder_layout(self.root) is not None:
            candidates = [self.root]
        else:
            candidates = sorted(p for p in self.root.iterdir()
                                if p.is_dir() and folder_layout(p) is not None)
        self.refused: dict[str, str] = {}
        """Task folders left out, name -> why."""
        folders = []
        for folder in candidates:
            reason = refusal(folder)
            if reason is None:
                folders.append(folder)
            else:
                self.refused[folder.name] = reason
                _log.warning("skipping task %s: %s", folder.name, reason)
        if not folders:
            if self.refused:
                raise ConfigError("; ".join(self.refused.values()))
            raise ConfigError(
                f"{self.root} holds no task folders (a Harbor task folder has instruction.md, "
                "task.toml, environment/, solution/ and tests/; a Terminal-Bench 1 one has "
                "task.yaml, solution.sh, run-tests.sh and tests/)")
        self._folders = {p.name: p for p in folders}
        self._ids = list(self._folders)
        self._cache: dict[str, Task] = {}

    def ids(self) -> list[str]:
        """Task folder names, sorted."""
        return list(self._ids)

    def get(self, task_id: str) -> Task:
        task = self._cache.get(task_id)
        if task is None:
            if task_id in self.refused:
                raise ConfigError(self.refused[task_id])
            if task_id not in self._folders:
                near = difflib.get_close_matches(task_id, self._ids, n=1)
                hint = f"; did you mean {near[0]!r}?" if near else ""
                raise TaskNotFoundError(f"no task {task_id!r} in {self.root}{hint}")
            task = self._cache[task_id] = load_task(self._folders[task_id], self.domain)
        return task

    def pick(self, seed: int) -> Task:
        return self.get(self._ids[seed % len(self._ids)])

    def __len__(self) -> int:
        return len(self._ids)


Generator = Callable[[int, Path], None]
"""``generate(seed, dest)`` writes one complete task folder into ``dest``."""


class GeneratedTaskSet(TaskSet):
    """Tasks written on demand by seeded generators, cached as folders.

    Seed ``s`` goes to generator ``s % k`` with its own seed ``s // k``; task ids are
    ``<generator name>-<its seed>``. ``size`` is how many seeds iteration covers.
    """

    def __init__(self, generators: Mapping[str, Generator], domain: str,
                 versions: Mapping[str, str] | None = None, size: int = 100) -> None:
        if not generators:
            raise ConfigError("a generated task set needs at least one generator")
        self.domain = domain
        self._gens = dict(sorted(generators.items()))
        self._names: Sequence[str] = list(self._gens)
        self._versions = dict(versions or {})
        self._size = size
        self._cache: dict[str, Task] = {}

    @property
    def generator_names(self) -> tuple[str, ...]:
        """The generators' names, sorted (task ids are ``<name>-<seed>``)."""
        return tuple(self._names)

    def get(self, task_id: str) -> Task:
        name, _, seed_text = task_id.rpartition("-")
        if name not in self._gens or not seed_text.isdigit():
            near = difflib.get_close_matches(name, self._names, n=1)
            seed_hint = seed_text if seed_text.isdigit() else "0"
            hint = f"; did you mean '{near[0]}-{seed_hint}'?" if near else ""
            raise TaskNotFoundError(
                f"{task_id!r} is not a generated task id (<generator>-<seed>, generators: "
                f"{', '.join(self._names)}){hint}")
        task = self._cache.get(task_id)
        if task is None:
            task = self._cache[task_id] = load_task(
                self._materialise(name, int(seed_text)), self.domain, task_id)
        return task

    def pick(self, seed: int) -> Task:
        return self.get(self._id_of(seed))

    def ids(self) -> list[str]:
        """``<generator>-<seed>`` for seeds ``0..size-1``; nothing is generated."""
        return [self._id_of(seed) for seed in range(self._size)]

    def _id_of(self, seed: int) -> str:
        k = len(self._names)
        return f"{self._names[seed % k]}-{seed // k}"

    def __len__(self) -> int:
        return self._size

    def _materialise(self, name: str, seed: int) -> Path:
        version = self._versions.get(name, "0")
        dest = cache_dir() / "generated" / self.domain / f"{name}-{version}" / str(seed)
        if (dest / "instruction.md").is_file():
            return dest
        with staging_for(dest) as staging:
            self._gens[name](seed, staging)
        return dest


def source_version(*paths: Path) -> str:
    """A short hash of source files, so caches follow code changes."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
