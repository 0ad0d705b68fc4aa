"""How an env grades an episode: the grader's needs, its warm graders, and the grade at the end.

:class:`EnvGrading` is the grading part of :class:`~taskgym.core.env.TaskEnv`. When the agent
submits or runs out of budget, :meth:`~EnvGrading.grade_episode` stops the agent's sandbox
(every agent process is gone), records its resource use and calls the domain's ``verify``; an
exception that stands for the environment's failure becomes a result with no verdict
(:mod:`taskgym.core.verdicts`), and a :class:`~taskgym.errors.TaskgymError` (a file of the
policy's, a sandbox it broke) a failed grade. Before an episode starts, ``reset`` checks what
the grader needs (:meth:`~EnvGrading.grader_needs`) and counts the episode in the warm graders
of its kind (:meth:`~EnvGrading.expect_grade`).
"""

from __future__ import annotations

import abc
import importlib
import weakref
from typing import TYPE_CHECKING, ClassVar

from taskgym.core.preflight import GraderNeeds, own_image_fix
from taskgym.core.reward import RewardResult
from taskgym.core.verdicts import no_verdict_of
from taskgym.errors import TaskgymError
from taskgym.sandbox.grading import Grader
from taskgym.sandbox.grading.warm_leases import Lease, release_dropped

if TYPE_CHECKING:
    from taskgym.core.preflight import Requirement
    from taskgym.core.task import Task
    from taskgym.sandbox import Backend, ResourceUsage, SandboxSpec, Session

__all__ = ["EnvGrading"]


class EnvGrading:
    """Grading for :class:`~taskgym.core.env.TaskEnv` (which owns the state it uses)."""

    grader: ClassVar[str | None] = None
    """``"module:function"`` of ``function(task, image)`` giving the
    :class:`~taskgym.sandbox.grading.Grader` that ``verify`` grades with (``image``: the
    task's ``container_image``), when it imports modules first: each reset then counts its
    episode in the warm graders of that kind, so that one waits when it grades
    (:mod:`taskgym.sandbox.grading.warm`)."""

    if TYPE_CHECKING:  # what TaskEnv provides
        image: ClassVar[str | None]
        grader_requirements: ClassVar[tuple[Requirement, ...]]
        task: Task | None
        last_reward: RewardResult | None
        last_usage: ResourceUsage
        _over: bool
        _lease: Lease | None

        @property
        def backend(self) -> Backend: ...

        @property
        def session(self) -> Session: ...

        def sandbox_spec(self, task: Task) -> SandboxSpec: ...

        def container_image(self, task: Task) -> str | None: ...

        def _end_session(self) -> None: ...

    @abc.abstractmethod
    def verify(self, task: Task, session: Session) -> RewardResult:
        """Grade the final state; every agent process has been killed already."""

    def grader_needs(self, task: Task) -> GraderNeeds | None:
        """What ``task``'s grader needs in the view of its sandbox, which ``reset`` checks
        before the episode starts (:mod:`taskgym.core.preflight`): ``grader_requirements``
        in the view of the :attr:`grader`'s spec (else the agent's sandbox's); ``None``:
        nothing to check."""
        if not self.grader_requirements:
            return None
        spec = self.make_grader(task).spec if self.grader else self.sandbox_spec(task)
        return GraderNeeds(self.grader_requirements, image=spec.image,
                           host_python=spec.host_python,
                           image_fix=own_image_fix(spec.image, self.image))

    def make_grader(self, task: Task) -> Grader:
        """The :class:`~taskgym.sandbox.grading.Grader` of :attr:`grader` for ``task``."""
        assert self.grader is not None
        module, _, function = self.grader.partition(":")
        made: Grader = getattr(importlib.import_module(module), function)(
            task, self.container_image(task))
        return made

    def expect_grade(self, task: Task) -> None:
        """Count the episode in the warm graders of its :attr:`grader`'s kind (a new lease
        when the task's kind is not the last one's)."""
        if self.grader is None:
            return
        made = self.make_grader(task)
        if made.preload is None:
            return
        old = lease = self._lease
        if lease is None or not lease.same(self.backend, made.spec, made.argv, made.preload):
            self._lease = lease = Lease(self.backend, made.spec, made.argv, made.preload)
            weakref.finalize(self, release_dropped, lease)  # an env dropped unclosed lets go too
            if old is not None:
                old.close()
        lease.expect()

    def grade_episode(self) -> RewardResult:
        """End the running episode and grade what the agent left (see the module's docstring)."""
        assert self.task is not None
        session = self.session
        self._over = True
        try:
            session.stop()
            self.last_usage = session.usage()
            if self._lease is not None:
                self._lease.settle()
            result = self.verify(self.task, session)
        except Exception as exc:
            verdictless = no_verdict_of(exc)
            if verdictless is not None:
                result = verdictless
            elif isinstance(exc, TaskgymError):  # a file of the policy's, a sandbox it broke
                result = RewardResult.failed(f"grading failed: {exc}")
            else:
                raise
        finally:
            self._end_session()
        self.last_reward = result
        return result
