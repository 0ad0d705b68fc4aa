"""Where an env's tasks come from: its curated folder, its seeded generators, a user's folders.

:class:`EnvTasks` is the task-set part of :class:`~taskgym.core.env.TaskEnv`: the declarations
(:attr:`~EnvTasks.curated`, :attr:`~EnvTasks.generators`, :attr:`~EnvTasks.generate`) and what
``tasks=`` may name (``"curated"``, ``"generated"``, ``"generated:<name>"``, a folder, a
:class:`~taskgym.core.task.TaskSet`).
"""

from __future__ import annotations

import difflib
import functools
import importlib
from pathlib import Path
from typing import ClassVar

from taskgym.core.task import FolderTaskSet, GeneratedTaskSet, TaskSet, source_version
from taskgym.errors import ConfigError
from taskgym.paths import envs_dir

__all__ = ["EnvTasks"]


class EnvTasks:
    """The task sets of an env (see the module's docstring)."""

    domain: ClassVar[str]
    curated: ClassVar[str | Path | None] = None
    """The folder of the curated task folders (``tasks="curated"``, the default): a path,
    absolute or relative to taskgym's ``envs/`` folder (``"<env id>/tasks"``); ``None``: the
    generated tasks are the default."""
    generators: ClassVar[tuple[str, ...]] = ()
    """Names of the seeded generators (``tasks="generated:<name>"``), made by :attr:`generate`."""
    generate: ClassVar[str | None] = None
    """``"module:function"`` of ``function(name, seed, dest)``, which writes one complete task
    folder at ``dest``; cached generated tasks follow the sources of that module's folder."""
    generated_size: ClassVar[int] = 100
    """How many seeds iterating a generated task set covers."""

    def default_tasks(self) -> TaskSet:
        """The task set used when ``tasks`` is not given: the curated one (:attr:`curated`),
        else, for a domain with generators only, the generated one."""
        if self.curated is None:
            generated = self.generated_tasks(())
            if generated is None:
                raise ConfigError(f"{type(self).__name__} has no curated tasks; pass tasks=...")
            return generated
        return FolderTaskSet(envs_dir() / self.curated, self.domain)

    def named_tasks(self, name: str) -> TaskSet | None:
        """A task set known by name, else ``None``: ``"curated"`` (the default set),
        ``"generated"`` (every generator) and ``"generated:<name>[,<name>...]"``."""
        if name == "curated":
            return self.default_tasks()
        if name == "generated" or name.startswith("generated:"):
            return self.generated_tasks(tuple(n for n in name.partition(":")[2].split(",") if n))
        return None

    def generated_tasks(self, names: tuple[str, ...]) -> TaskSet | None:
        """Seeded tasks of the named :attr:`generators` (every one when ``names`` is empty)."""
        if not self.generators or self.generate is None:
            return None
        unknown = [n for n in names if n not in self.generators]
        if unknown:
            raise ConfigError(f"unknown generator {unknown[0]!r} of {self.domain}; choose from "
                              f"{', '.join(self.generators)}")
        module_name, _, function = self.generate.partition(":")
        module = importlib.import_module(module_name)
        generate = getattr(module, function)
        version = source_version(*sorted(Path(module.__file__ or "").parent.rglob("*.py")))
        chosen = names or self.generators
        return GeneratedTaskSet(
            {n: functools.partial(generate, n) for n in chosen}, self.domain,
            {n: version for n in chosen}, size=self.generated_size)

    def resolve_tasks(self, tasks: TaskSet | str | Path | None) -> TaskSet:
        """The task set ``tasks`` names (see :class:`~taskgym.core.env.TaskEnv`)."""
        if tasks is None:
            return self.default_tasks()
        if isinstance(tasks, TaskSet):
            return tasks
        if isinstance(tasks, str):
            named = self.named_tasks(tasks)
            if named is not None:
                return named
            folder = Path(tasks).expanduser().resolve()
            if not folder.exists():
                names = self.task_set_names()
                near = difflib.get_close_matches(tasks, names, n=1)
                raise ConfigError(
                    f"tasks={tasks!r}: not a named task set, and the folder {folder} does not "
                    "exist." + (f" Did you mean {near[0]!r}?" if near else "")
                    + f" Named sets of {self.domain}: {', '.join(names)}")
        return FolderTaskSet(Path(tasks), self.domain)

    def task_set_names(self) -> list[str]:
        """The names :meth:`named_tasks` accepts (for error messages)."""
        generated = self.generated_tasks(())
        if generated is None:
            return ["curated"]
        generators = generated.generator_names if isinstance(generated, GeneratedTaskSet) else ()
        return ["curated", "generated", *(f"generated:{g}" for g in generators)]
