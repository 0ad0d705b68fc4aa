"""A domain's own table of task.toml (``[cad]``, ``[mesh]``, ...), declared as a pydantic model.

A domain subclasses :class:`TaskSettings`, names its table in :attr:`~TaskSettings.table` and
declares the keys as fields; ``Settings.of(task)`` reads and checks the task's table, and a bad
key or value is a :class:`~taskgym.errors.ConfigError` that names the file and the table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from taskgym.core.task import Task
from taskgym.errors import ConfigError

if TYPE_CHECKING:
    from typing import Self

__all__ = ["TaskSettings"]


class TaskSettings(BaseModel):
    """The settings a task folder gives a domain in the ``[<table>]`` table of its task.toml."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    table: ClassVar[str]
    """The table's name in task.toml."""

    @classmethod
    def of(cls, task: Task) -> Self:
        """``task``'s table (every key at its default when the table is absent)."""
        try:
            return cls.model_validate(task.config.get(cls.table, {}))
        except ValidationError as exc:
            raise ConfigError(f"{task.path / 'task.toml'} [{cls.table}]: {exc}") from exc
