"""Group rollouts from one state (GRPO and the like) and the state-replay cache.

```python
import taskgym.rollouts as rollouts
envs = rollouts.group("coding-terminal-v0", "py-fix-memo-leak", prefix=[...], n=8)
for env in envs:
    obs = env.restored_observation   # the prefix's last observation, the same in each
    ...                               # step each env on its own; each is graded on its own
    env.close()
```

:func:`group` replays ``prefix`` with the prefix cache (:mod:`taskgym.core.replay`, so a
second group from the same prefix skips re-running it) and forks ``n`` envs from its end
(:meth:`TaskEnv.fork <taskgym.TaskEnv.fork>`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from taskgym.core.env import TaskEnv
from taskgym.core.episode_snapshot import fork_env, snapshot_env
from taskgym.core.registry import make
from taskgym.core.replay import CacheStats, cache_stats, clear_cache, set_cache_size
from taskgym.errors import ConfigError

__all__ = ["CacheStats", "clear_replay_cache", "group", "replay_cache_stats",
           "set_replay_cache_size"]


def group(env_id: str, task_id: str, prefix: Sequence[Any], n: int,
          **make_kwargs: Any) -> list[TaskEnv]:
    """``n`` independent envs of ``env_id`` (made with ``make_kwargs``) on ``task_id``, each
    in its own sandbox at the state the actions ``prefix`` lead to, with the same step count,
    time left and transcript. Each env's :attr:`~taskgym.TaskEnv.restored_observation` is
    the observation of the prefix's last action (the task's instruction for an empty
    prefix). The envs are :class:`~taskgym.TaskEnv` objects without gymnasium's wrappers;
    close each when done. Raises :class:`ConfigError` when an action of ``prefix`` ends the
    episode (see :mod:`taskgym.core.replay`)."""
    if n < 1:
        raise ConfigError(f"group() needs n >= 1, not {n}")
    made = make(env_id, **make_kwargs)
    try:
        env = made.unwrapped
        if not isinstance(env, TaskEnv):
            raise ConfigError(f"{env_id} is not a taskgym env")
        obs, _info = env.reset(options={"task_id": task_id, "replay": list(prefix)})
        snap = snapshot_env(env, observation=obs)
        try:
            return fork_env(env, n, snap, refill=False)  # ``made`` is closed next
        finally:
            snap.close()
    finally:
        made.close()


def replay_cache_stats() -> CacheStats:
    """Hits, misses, evictions, entries and bytes of this process's replay cache."""
    return cache_stats()


def set_replay_cache_size(max_bytes: int) -> None:
    """Bound the replay cache at ``max_bytes`` (default
    :data:`taskgym.core.replay.DEFAULT_MAX_BYTES`; also ``TASKGYM_REPLAY_CACHE_BYTES``)."""
    set_cache_size(max_bytes)


def clear_replay_cache() -> None:
    """Empty the replay cache (deleting its snapshots) and zero its counters."""
    clear_cache()
