"""The tables of task.toml a domain reads (``[cad]``, ``[mesh]``, ``[verifier]``, ...), declared
as pydantic models: parsed and checked in one place.

A domain subclasses :class:`TaskSettings`, names its table in :attr:`~TaskSettings.table` and
declares the keys as fields; ``Settings.of(task)`` reads and checks the task's table, and a bad
key or value is a :class:`~taskgym.errors.ConfigError` that names the file and the table.
:class:`VerifierSettings` is Harbor's ``[verifier]`` table, read the same way. (The budgets of
``[agent]``, ``[verifier]`` and ``[environment]`` become the task's
:class:`~taskgym.core.task.Limits` when the folder is loaded.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from taskgym.core.task import Task
from taskgym.errors import ConfigError

if TYPE_CHECKING:
    from typing import Self

__all__ = ["TaskSettings", "VerifierSettings"]


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


class VerifierSettings(TaskSettings):
    """Harbor's ``[verifier]`` table: the keys taskgym reads. Harbor's other keys are ignored
    (a Harbor folder loads as it is)."""

    model_config = ConfigDict(frozen=True, extra="ignore")
    table = "verifier"
    timeout_sec: float | None = Field(default=None, gt=0)
    """Longest grading run (the task's ``Limits.verifier_timeout_sec``)."""
    grader: str | None = None
    """How a coding task is graded: ``"test.sh"`` (Harbor's script, the default when
    tests/test.sh exists) or ``"pytest"`` (taskgym's per-test run of tests/test_*.py)."""
    expected_tests: int | None = Field(default=None, ge=0)
    """How many tests the per-test run must collect (fewer is a failed gate)."""

    @field_validator("grader")
    @classmethod
    def _known_grader(cls, value: str | None) -> str | None:
        if value not in (None, "test.sh", "pytest"):
            raise ValueError(f'grader must be "test.sh" or "pytest", not {value!r}')
        return value
