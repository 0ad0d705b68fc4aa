"""The Ray actor of an :class:`~taskgym.ray.EnvPool`: one process on one node that owns the
sandboxes of its episodes.

:class:`EnvHost` is a plain class; the pool makes it an async Ray actor (``ray.remote``), so
that one actor process serves up to ``sessions`` episodes at once from its event loop, each
with its own env (``taskgym.make(env_id, **make_kwargs)``) driven by the env's asyncio API
(``areset``/``astep``/``aclose``). The sandboxes are started by this process, on its node, and
die with it (bubblewrap's ``--die-with-parent``; a container backend's reaper). Nothing here
retries: a step is not idempotent, and the pool ends the episodes of an actor that died.
"""

from __future__ import annotations

import functools
import os
import socket
from typing import Any

from taskgym.core.registry import make
from taskgym.core.wrappers import TaskMethods
from taskgym.errors import TaskgymError
from taskgym.sandbox.host.blocking import run_blocking
from taskgym.sandbox.host.cleanup import reap

__all__ = ["EnvHost", "PoolCapacityError", "PoolError", "SessionLost"]


class PoolError(TaskgymError):
    """An :class:`~taskgym.ray.EnvPool` could not do what was asked (its actors could not be
    placed or started, or the pool is closed)."""


class PoolCapacityError(PoolError):
    """The pool is at one of its limits (every session holds an episode, or an actor has
    ``max_pending_calls`` calls already); ``str()`` says which and what to do."""


class SessionLost(PoolError):
    """The actor holds no episode of that session: it was restarted (its process died and
    every sandbox with it) after the session's episode started."""


class EnvHost:
    """Episodes of ``env_id`` in this process, one env per session id.

    Args:
        env_id: the registered env to make (``taskgym.make``).
        make_kwargs: its keywords (``tasks``, ``sandbox``, ``max_steps``...).
        sessions: how many episodes this actor holds at once.
    """

    def __init__(self, env_id: str, make_kwargs: dict[str, Any], sessions: int) -> None:
        self.env_id, self.make_kwargs, self.sessions = env_id, dict(make_kwargs), sessions
        make(env_id, **self.make_kwargs).close()  # a bad id or keyword fails the actor's start
        self.envs: dict[str, TaskMethods] = {}

    async def where(self) -> dict[str, Any]:
        """Where this actor runs: its Ray node id, host name and process id."""
        import ray

        return {"node_id": ray.get_runtime_context().get_node_id(),
                "hostname": socket.gethostname(), "pid": os.getpid(),
                "episodes": len(self.envs)}

    async def reset(self, session: str, seed: int | None,
                    options: dict[str, Any] | None) -> tuple[Any, dict[str, Any]]:
        """Start an episode of ``session`` (its env is made on the first reset)."""
        env = self.envs.get(session)
        if env is None:
            if len(self.envs) >= self.sessions:
                raise PoolCapacityError(f"this actor holds its {self.sessions} episodes already")
            env = self.envs[session] = await run_blocking(
                functools.partial(make, self.env_id, **self.make_kwargs))
        return await env.areset(seed=seed, options=options)  # a failed one keeps the session

    async def step(self, session: str, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """One step of ``session``'s episode (the env's ``astep``: never raises for the action)."""
        env = self.envs.get(session)
        if env is None:
            raise SessionLost(f"no episode of session {session} here (the actor was restarted)")
        return await env.astep(action)

    async def close(self, session: str) -> None:
        """Close ``session``'s env and its sandbox (nothing to do for an unknown session)."""
        env = self.envs.pop(session, None)
        if env is not None:
            await env.aclose()

    async def close_all(self) -> int:
        """Close every env of this actor, then remove what sandboxes of dead processes on this
        node left behind (an actor killed before: :func:`taskgym.sandbox.host.cleanup.reap`).
        Returns how many envs were closed."""
        envs, self.envs = list(self.envs.values()), {}
        for env in envs:
            await env.aclose()
        await run_blocking(reap)
        return len(envs)

