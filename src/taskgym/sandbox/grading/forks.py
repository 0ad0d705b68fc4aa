"""A backend's own way to start a warm grade: forked from a process that imported the
grader's libraries once, instead of taken from the pool of pre-started graders.

The generic warm-grader code (:mod:`~taskgym.sandbox.grading.warm_leases`,
:mod:`~taskgym.sandbox.grading.warm_run`, :mod:`~taskgym.sandbox.grading.warm`) asks the
backend through :meth:`Backend.grader_forks <taskgym.sandbox.base.Backend.grader_forks>` and
names no backend. The local backend answers with its grader zygotes
(:mod:`taskgym.sandbox.local.zygote`); the docker backend with ``None``: its warm grades come
from the pool of pre-started containers (:meth:`Backend.prestart`).

A kind is the pool's: the grader stub's spec and command (:func:`~taskgym.sandbox.grading.warm.stub_command`);
``version`` is the pool's version of the grader's code, so a changed grader boots anew.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from taskgym.sandbox.base import Prestarted, SandboxSpec

__all__ = ["GraderForks"]


class GraderForks(abc.ABC):
    """The forking graders of one backend, one per kind."""

    @abc.abstractmethod
    def start(self, spec: SandboxSpec, argv: list[str], version: str) -> bool:
        """Begin booting the forking grader of this kind (nothing when it runs); whether one
        serves the kind (``False``: the pool does)."""

    @abc.abstractmethod
    def fork(self, spec: SandboxSpec, argv: list[str], version: str, grade_spec: SandboxSpec,
             deadline: float) -> Prestarted | None:
        """One grade forked by this kind's grader, with ``grade_spec``'s limits, ready by
        ``deadline`` (``time.monotonic()``); ``None`` when none can serve it (the pool does)."""

    @abc.abstractmethod
    def close(self, spec: SandboxSpec, argv: list[str]) -> None:
        """Stop the forking grader of this kind, if one runs (its last lease closed)."""

    @abc.abstractmethod
    def close_all(self) -> None:
        """Stop every forking grader of this backend."""
