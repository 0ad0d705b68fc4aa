"""Tasks and task sets.

A :class:`Task` is one problem instance, read from a task folder (Harbor / Terminal-Bench 2
layout: ``instruction.md``, ``task.toml``, ``environment/``, ``solution/``, ``tests/``).
A :class:`TaskSet` is an indexable collection: a folder of task folders
(:class:`FolderTaskSet`) or seeded generators (:class:`GeneratedTaskSet`), whose tasks
are written to a cache folder in the same layout, so every task is a folder.
"""

from __future__ import annotations

import abc
import difflib
import hashlib
import os
import shutil
import tempfile
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from taskgym.errors import ConfigError, TaskNotFoundError

__all__ = [
    "FolderTaskSet",
    "GeneratedTaskSet",
    "Generator",
    "Limits",
    "Task",
    "TaskSet",
    "cache_dir",
    "load_task",
]


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


class Task(BaseModel):
    """One problem instance."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    domain: str
    instruction: str
    path: Path
    """The task folder."""
    difficulty: str = "medium"
    category: str = ""
    tags: tuple[str, ...] = ()
    limits: Limits = Limits()
    config: Mapping[str, Any] = Field(default_factory=dict)
    """The whole parsed task.toml, for the domain's own keys."""


def load_task(path: Path | str, domain: str, task_id: str | None = None) -> Task:
    """Read a task folder; raises :class:`ConfigError` naming what is wrong."""
    path = Path(path).resolve()
    instruction = path / "instruction.md"
    if not instruction.is_file():
        raise ConfigError(f"{path} is not a task folder: it has no instruction.md")
    config: dict[str, Any] = {}
    toml_path = path / "task.toml"
    if toml_path.is_file():
        try:
            config = tomllib.loads(toml_path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{toml_path}: {exc}") from exc
    sections = {}
    for name in ("metadata", "agent", "verifier", "environment"):
        section = config.get(name, {})
        if not isinstance(section, dict):
            raise ConfigError(f"{toml_path}: [{name}] must be a table, not {section!r}")
        sections[name] = section
    meta, agent = sections["metadata"], sections["agent"]
    verifier, environment = sections["verifier"], sections["environment"]
    tags = meta.get("tags", ())
    if isinstance(tags, str):
        tags = (tags,)
    limits: dict[str, Any] = {}
    for key, section, name in (
        ("max_steps", agent, "max_steps"),
        ("timeout_sec", agent, "timeout_sec"),
        ("command_timeout_sec", agent, "command_timeout_sec"),
        ("verifier_timeout_sec", verifier, "timeout_sec"),
        ("memory_mb", environment, "memory_mb"),
        ("pids", environment, "pids"),
        ("disk_mb", environment, "disk_mb"),
        ("cpus", environment, "cpus"),
    ):
        if name in section:
            limits[key] = section[name]
    try:
        return Task(
            id=task_id or path.name,
            domain=domain,
            instruction=instruction.read_text(),
            path=path,
            difficulty=str(meta.get("difficulty", "medium")),
            category=str(meta.get("category", "")),
            tags=tuple(str(t) for t in tags),
            limits=Limits(**limits),
            config=config,
        )
    except ValueError as exc:
        raise ConfigError(f"{toml_path}: {exc}") from exc


def cache_dir() -> Path:
    """Where generated tasks and prepared workspaces are kept (``$TASKGYM_CACHE``)."""
    base = os.environ.get("TASKGYM_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "taskgym")
    path = Path(base)
    path.mkdir(parents=True, exist_ok=True)
    return path


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

    def __iter__(self) -> Iterator[Task]:
        return (self.pick(i) for i in range(len(self)))


class FolderTaskSet(TaskSet):
    """Task folders under one folder (or one task folder by itself), sorted by name."""

    def __init__(self, root: Path | str, domain: str) -> None:
        self.root = Path(root).expanduser().resolve()
        self.domain = domain
        if not self.root.is_dir():
            raise ConfigError(f"task folder {self.root} does not exist")
        if (self.root / "instruction.md").is_file():
            folders = [self.root]
        else:
            folders = sorted(p for p in self.root.iterdir() if (p / "instruction.md").is_file())
        if not folders:
            raise ConfigError(
                f"{self.root} holds no task folders (a task folder has instruction.md, task.toml, "
                "environment/, solution/ and tests/)")
        self._folders = {p.name: p for p in folders}
        self._ids = list(self._folders)
        self._cache: dict[str, Task] = {}

    def ids(self) -> list[str]:
        return list(self._ids)

    def get(self, task_id: str) -> Task:
        task = self._cache.get(task_id)
        if task is None:
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
    def generator_names(self) -> list[str]:
        """The generators, in the order seeds go to them (seed ``s`` to ``s % k``)."""
        return list(self._names)

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
        k = len(self._names)
        return self.get(f"{self._names[seed % k]}-{seed // k}")

    def __len__(self) -> int:
        return self._size

    def _materialise(self, name: str, seed: int) -> Path:
        version = self._versions.get(name, "0")
        dest = cache_dir() / "generated" / self.domain / f"{name}-{version}" / str(seed)
        if (dest / "instruction.md").is_file():
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{seed}-", dir=dest.parent))
        try:
            self._gens[name](seed, tmp / "task")
            try:
                os.rename(tmp / "task", dest)
            except OSError:  # another worker won the race: theirs is identical
                if not (dest / "instruction.md").is_file():
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return dest


def source_version(*paths: Path) -> str:
    """A short hash of source files, so caches follow code changes."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]
