"""Episode snapshots: :meth:`TaskEnv.snapshot`, :meth:`TaskEnv.restore`, and the episode fork
:meth:`TaskEnv.fork` (new envs restored from one snapshot; each child's sandbox is a session
fork, ``Backend.fork``, and no process is forked: docs/concepts.md names the three forks apart).

An :class:`EpisodeSnapshot` is a :class:`~taskgym.sandbox.snapshots.session_snapshot.SessionSnapshot` (the
workspace and the shell's state) with the episode around it: the task, the step count, the
time used (a restored episode's deadline is *now + what was left*), the episode's limits,
the transcript, the render mode, the env's ``np_random`` state and the domain's own episode
state (:meth:`TaskEnv.episode_state`). Restoring starts a fresh sandbox from the snapshot
(``Backend.fork``): nothing of the env's previous episode survives, and the snapshot itself
is unchanged, so one snapshot may be restored any number of times, into any env of the same
class and configuration.

Processes the agent left running in the background are not carried (their list is
``snap.session.background``).
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from taskgym.core.task import Limits, Task
from taskgym.errors import ConfigError, SandboxError
from taskgym.sandbox.snapshots.session_snapshot import SessionSnapshot
from taskgym.sandbox.snapshots.spares import Spares

if TYPE_CHECKING:
    from taskgym.core.env import TaskEnv

__all__ = ["EpisodeSnapshot", "fork_env", "restore_env", "snapshot_env"]

E = TypeVar("E", bound="TaskEnv")


@dataclass(eq=False)
class EpisodeSnapshot:
    """A saved episode; see :mod:`taskgym.core.episode_snapshot`. :meth:`close` frees its copy of
    the workspace (done too when it is garbage-collected, and at exit)."""

    env_class: type[TaskEnv]
    session: SessionSnapshot
    task: Task
    steps: int
    elapsed_sec: float
    """Wall-clock seconds of the episode's budget used when it was taken."""
    limits: Limits
    transcript: tuple[str, ...]
    render_mode: str | None
    rng_state: dict[str, Any]
    domain_state: dict[str, Any]
    observation: dict[str, str] | None = None
    """The observation the episode was at (the last step's), when the taker gave it."""

    @property
    def workspace_bytes(self) -> int:
        return self.session.workspace_bytes

    def close(self) -> None:
        self.session.close()


def snapshot_env(env: TaskEnv, observation: dict[str, str] | None = None) -> EpisodeSnapshot:
    if env.task is None or env.is_over:
        raise SandboxError("no episode is running (call reset() first, or the last one is "
                           "over); a snapshot is taken of a running episode")
    session = env.session.snapshot()
    return EpisodeSnapshot(
        env_class=type(env), session=session, task=env.task, steps=env.steps_taken,
        elapsed_sec=env.episode_limits.timeout_sec - env.remaining_seconds(),
        limits=env.episode_limits, transcript=tuple(env.transcript),
        render_mode=env.render_mode,
        rng_state=copy.deepcopy(dict(env.np_random.bit_generator.state)),
        domain_state=env.episode_state(), observation=observation)


def restore_env(env: TaskEnv, snap: EpisodeSnapshot, spares: Spares | None = None) -> None:
    if type(env) is not snap.env_class:
        raise ConfigError(f"a snapshot of {snap.env_class.__name__} cannot be restored into "
                          f"{type(env).__name__}; restore it into an env of the same class")
    if snap.session.closed:
        raise SandboxError("the snapshot is closed; take a new one with snapshot()")
    env.end_episode()
    session = env.backend.fork(snap.session, spares)
    rng = np.random.Generator(np.random.PCG64())
    rng.bit_generator.state = copy.deepcopy(snap.rng_state)
    remaining = max(0.0, snap.limits.timeout_sec - snap.elapsed_sec)
    env.resume_episode(session, snap.task, snap.steps, snap.limits,
                       time.monotonic() + remaining, list(snap.transcript), rng)
    env.render_mode = snap.render_mode
    env.restore_episode_state(snap.domain_state)
    env.restored_observation = snap.observation


def fork_env(env: E, n: int, snap: EpisodeSnapshot | None = None,
             refill: bool = True) -> list[E]:
    """``n`` new envs, each made with ``env``'s constructor arguments and restored from
    ``snap`` (a snapshot of ``env`` taken now when ``None``, closed after), each into a spare
    sandbox of ``env``'s (:meth:`TaskEnv.fork_spares`) when one is ready; ``n`` spares are
    started in the background for the next fork unless ``refill`` is false (``env`` is about
    to be closed)."""
    if n < 0:
        raise ConfigError(f"fork(n) needs n >= 0, not {n}")
    own = snap is None
    taken = snapshot_env(env) if snap is None else snap
    children: list[E] = []
    spares = env.fork_spares()
    try:
        for _ in range(n):
            child = env.clone()
            children.append(child)
            restore_env(child, taken, spares)
    except BaseException:
        for child in children:
            child.close()
        raise
    finally:
        if own:
            taken.close()
    if refill:
        spares.want(taken.session.spec, n)
    return children
