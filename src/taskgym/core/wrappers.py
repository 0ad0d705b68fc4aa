"""taskgym's own env methods through Gymnasium's wrappers.

``gymnasium.make`` wraps an env in ``PassiveEnvChecker`` and ``OrderEnforcing``, which forward
only Gymnasium's API: ``areset``, ``astep``, ``aclose``, ``snapshot``, ``restore``, ``fork``
and ``clone`` would be reachable only through ``env.unwrapped``. ``taskgym.make`` puts
:class:`TaskMethods` outermost, which hands those calls to the env itself. (It cannot be a
spec's ``additional_wrappers`` entry, which ``gymnasium.make`` would apply too: Gymnasium
refuses those beside a ``vector_entry_point``, so ``gymnasium.make`` gives the chain without
it.) Gymnasium's wrappers check the sync API only; the env enforces its own order on the
async one (an ``astep`` before ``areset`` is an error observation). A wrapper a user adds on
top hides them again: ``env.get_wrapper_attr("astep")`` reaches them through any chain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import gymnasium as gym

if TYPE_CHECKING:
    from taskgym.core.env import StepResult, TaskEnv
    from taskgym.core.episode_snapshot import EpisodeSnapshot
    from taskgym.sandbox.shell.plans import Plan

__all__ = ["TaskMethods"]


class TaskMethods(gym.Wrapper[Any, Any, Any, Any]):
    """Forwards taskgym's async, plan, snapshot and fork methods to the wrapped env's
    :class:`~taskgym.core.env.TaskEnv`; everything else is Gymnasium's wrapper chain."""

    @property
    def task_env(self) -> TaskEnv:
        """The env under every wrapper."""
        return self.env.unwrapped  # type: ignore[return-value]

    async def areset(self, *, seed: int | None = None,
                     options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """:meth:`TaskEnv.areset`."""
        return await self.task_env.areset(seed=seed, options=options)

    async def astep(self, action: Any) -> StepResult:
        """:meth:`TaskEnv.astep`."""
        return await self.task_env.astep(action)

    async def aclose(self) -> None:
        """:meth:`TaskEnv.aclose`."""
        await self.task_env.aclose()

    def poll_step(self, action: Any) -> Plan[StepResult]:
        """:meth:`TaskEnv.poll_step`."""
        return self.task_env.poll_step(action)

    def snapshot(self) -> EpisodeSnapshot:
        """:meth:`TaskEnv.snapshot`."""
        return self.task_env.snapshot()

    def restore(self, snap: EpisodeSnapshot) -> None:
        """:meth:`TaskEnv.restore`."""
        self.task_env.restore(snap)

    def fork(self, n: int) -> list[TaskEnv]:
        """:meth:`TaskEnv.fork`: ``n`` unwrapped children."""
        return self.task_env.fork(n)

    def clone(self) -> TaskEnv:
        """:meth:`TaskEnv.clone`: an unwrapped copy."""
        return self.task_env.clone()
