"""An env's episodes saved, restored, forked and cloned (:mod:`taskgym.core.episode_snapshot` and
:mod:`taskgym.core.replay` do the work).

:class:`EnvSnapshots` is that part of :class:`~taskgym.core.env.TaskEnv`, with the domain's own
state of an episode: the attributes :attr:`~EnvSnapshots.episode_attributes` names, and the
``submit`` tool's arguments (``submission``), carried by every snapshot, restore and fork.
"""

from __future__ import annotations

import copy
import inspect
from typing import TYPE_CHECKING, Any, ClassVar

from taskgym.sandbox.snapshots.spares import Spares

if TYPE_CHECKING:
    from typing import Self

    import numpy as np

    from taskgym.core.env_step import Observation
    from taskgym.core.episode_snapshot import EpisodeSnapshot
    from taskgym.core.task import Limits, Task, TaskSet
    from taskgym.sandbox import Backend, Session

__all__ = ["EnvSnapshots"]

CARRIED = ("submission",)
"""The base's own episode state, carried beside the domain's :attr:`episode_attributes`."""


class EnvSnapshots:
    """Snapshots, restores, forks and clones for :class:`~taskgym.core.env.TaskEnv`."""

    episode_attributes: ClassVar[tuple[str, ...]] = ()
    """Attributes holding the domain's own state of an episode (a multi-step task's progress),
    set by ``start_episode`` and carried by :meth:`snapshot`, :meth:`restore` and :meth:`fork`."""
    restored_observation: Observation | None = None
    """The observation the episode was at when its snapshot was taken, after :meth:`restore`
    or :meth:`fork` (for replayed prefixes and :func:`taskgym.rollouts.group`: the last
    step's); ``None`` when the snapshot did not record one."""
    _init_args: tuple[tuple[Any, ...], dict[str, Any]]
    _spares: Spares | None = None

    if TYPE_CHECKING:  # what TaskEnv provides
        task: Task | None
        task_set: TaskSet
        last_reward: Any
        episode_limits: Limits
        _session: Session | None
        _steps: int
        _deadline: float
        _over: bool
        _transcript: list[str]
        _np_random: np.random.Generator | None

        @property
        def backend(self) -> Backend: ...

        def end_episode(self) -> None: ...

        def expect_grade(self, task: Task) -> None: ...

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        env = super().__new__(cls)
        env._init_args = (args, dict(kwargs))  # what clone() makes its twins with
        return env

    def snapshot(self) -> EpisodeSnapshot:
        """Save the running episode: workspace, shell state, task, steps, time used,
        limits, transcript, ``np_random`` and the domain's state (:meth:`episode_state`).
        Background processes are listed in ``snap.session.background``, not carried.
        Raises :class:`SandboxError` when no episode is running or it is over."""
        from taskgym.core.episode_snapshot import snapshot_env

        return snapshot_env(self)  # type: ignore[arg-type]

    def restore(self, snap: EpisodeSnapshot) -> None:
        """Replace the current episode (if any) by the saved one, in a fresh sandbox; its
        deadline is now plus the time that was left. ``snap`` is unchanged (restore it again
        at will). Raises :class:`ConfigError` for a snapshot of another env class."""
        from taskgym.core.episode_snapshot import restore_env

        restore_env(self, snap)  # type: ignore[arg-type]

    def fork(self, n: int) -> list[Self]:
        """``n`` independent envs of this class and configuration (made with this env's
        constructor arguments), each at this episode's current state in its own sandbox,
        with its own limits and grading. This episode goes on unchanged."""
        from taskgym.core.episode_snapshot import fork_env

        forks: list[Self] = fork_env(self, n)  # type: ignore[type-var]
        return forks

    def fork_spares(self) -> Spares:
        """The started, unused sandboxes this env's forks fill (:mod:`taskgym.sandbox.snapshots.spares`),
        kept until the env is closed."""
        if self._spares is None:
            self._spares = Spares(self.backend)
        return self._spares

    def clone(self) -> Self:
        """A new env made with the arguments this one was made with (no episode yet). It
        shares this env's backend and task set (what those arguments made already), so a
        clone costs neither a backend probe nor a task-folder scan."""
        from taskgym.core.env import TaskEnv

        args, kwargs = self._init_args
        try:
            bound = inspect.signature(TaskEnv.__init__).bind(self, *args, **kwargs)
        except TypeError:  # a domain's own arguments: make it from them as they are
            return type(self)(*args, **kwargs)
        given = {**bound.arguments, "tasks": self.task_set, "sandbox": self.backend}
        del given["self"]
        twin = type(self)(**given)
        twin._init_args = self._init_args  # the same configuration (the replay cache's key)
        return twin

    def episode_state(self) -> dict[str, Any]:
        """The domain's own state of the running episode, for :meth:`snapshot`: a deep copy of
        each attribute :attr:`episode_attributes` names and of ``submission`` (the task
        itself is shared, not copied)."""
        return {name: copy.deepcopy(getattr(self, name, None), {id(self.task): self.task})
                for name in (*CARRIED, *self.episode_attributes)}

    def restore_episode_state(self, state: dict[str, Any]) -> None:
        """Take back what :meth:`episode_state` returned (a restore or a fork), copied again so
        that one snapshot can be restored many times."""
        for name in (*CARRIED, *self.episode_attributes):
            if name in state:
                setattr(self, name, copy.deepcopy(state[name], {id(self.task): self.task}))

    def resume_episode(self, session: Session, task: Task, steps: int, limits: Limits,
                       deadline: float, transcript: list[str], rng: np.random.Generator) -> None:
        """Make ``session`` this env's running episode at that point (what a restore does)."""
        self.end_episode()
        self._session, self.task, self._steps = session, task, steps
        self.episode_limits, self._deadline = limits, deadline
        self._transcript, self._np_random = transcript, rng
        self._over = False
        self.expect_grade(task)
        self.last_reward = None
