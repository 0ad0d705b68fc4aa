"""State replay: ``reset(options={"task_id": t, "replay": [actions...]})`` from a prefix cache.

The cache is per process. Its keys are the env's class, the env's constructor arguments
(what shapes an episode: task set, sandbox, budgets...), the task id, the reset's seed and
the canonical JSON of each action of the prefix. A replayed reset resumes from the longest
cached prefix of its actions (restoring that snapshot into a fresh sandbox), steps through
the rest, and caches the end state. It assumes what replay assumes everywhere: the same
actions from the same state give the same state (a command reading the clock or
``$RANDOM`` is not replayed exactly; the cached state is the one first reached).

Every action of a prefix is a step like any other: an action the env answers with an error
observation (a bad tool name, a failing command) is replayed as such. An action that ends
the episode (``submit``, a budget running out) is an error: the episode is closed and
:class:`~taskgym.errors.ConfigError` raised, since a prefix must leave the episode running.

The cache is bounded in bytes: each entry counts its workspace bytes plus the size of its
shell state, the least recently used entries are evicted (their snapshot folders deleted)
past the bound: :data:`DEFAULT_MAX_BYTES`, or ``TASKGYM_REPLAY_CACHE_BYTES`` in the
environment, or :func:`set_cache_size`. :func:`cache_stats` has the hit, miss and eviction
counters (also ``taskgym.rollouts.replay_cache_stats()``).
"""

from __future__ import annotations

import itertools
import json
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from taskgym.core.episode_snapshot import EpisodeSnapshot, restore_env, snapshot_env
from taskgym.errors import ConfigError
from taskgym.sandbox.config import whole_number_env

if TYPE_CHECKING:
    from taskgym.core.env import TaskEnv

__all__ = ["DEFAULT_MAX_BYTES", "CacheStats", "cache_stats", "clear_cache", "replay_reset",
           "set_cache_size"]

DEFAULT_MAX_BYTES = 1 << 30
"""The cache's default bound: 1 GiB of saved workspaces (in the host's temporary folder)."""

_Key = tuple[str, str, str, str, tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class CacheStats:
    """The replay cache's counters since the process started (or :func:`clear_cache`)."""

    hits: int
    """Replayed resets that resumed from a cached prefix (of any length above zero)."""
    misses: int
    """Replayed resets that found no cached prefix and ran every action."""
    evictions: int
    """Entries removed to stay under :attr:`max_bytes`."""
    entries: int
    bytes: int
    max_bytes: int


@dataclass(eq=False)
class _Entry:
    snap: EpisodeSnapshot
    size: int
    pins: int = 0
    """Restores running from it now; an evicted entry is closed when the last one ends."""
    evicted: bool = False


class _Cache:
    def __init__(self, max_bytes: int) -> None:
        self.lock = threading.Lock()
        self.max_bytes = max_bytes
        self.entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self.bytes = self.hits = self.misses = self.evictions = 0

    def pin_longest(self, keys: list[_Key]) -> tuple[int, _Entry | None]:
        """The longest cached prefix (its length, its entry pinned) and the counters."""
        with self.lock:
            for length in range(len(keys), 0, -1):
                entry = self.entries.get(keys[length - 1])
                if entry is not None:
                    self.entries.move_to_end(keys[length - 1])
                    entry.pins += 1
                    self.hits += 1
                    return length, entry
            if keys:
                self.misses += 1
            return 0, None

    def unpin(self, entry: _Entry) -> None:
        with self.lock:
            entry.pins -= 1
            if entry.evicted and entry.pins == 0:
                entry.snap.close()

    def put(self, key: _Key, snap: EpisodeSnapshot) -> None:
        size = snap.workspace_bytes + len(snap.session.shell.script())
        with self.lock:
            if key in self.entries or size > self.max_bytes:
                snap.close()
                return
            self.entries[key] = _Entry(snap, size)
            self.bytes += size
            self.shrink()

    def shrink(self) -> None:
        while self.bytes > self.max_bytes and self.entries:
            _key, old = self.entries.popitem(last=False)
            self.bytes -= old.size
            self.evictions += 1
            self.drop(old)

    def drop(self, entry: _Entry) -> None:
        entry.evicted = True
        if entry.pins == 0:
            entry.snap.close()

    def clear(self) -> None:
        with self.lock:
            for entry in self.entries.values():
                self.drop(entry)
            self.entries.clear()
            self.bytes = self.hits = self.misses = self.evictions = 0


def _default_size() -> int:
    return whole_number_env("TASKGYM_REPLAY_CACHE_BYTES", DEFAULT_MAX_BYTES,
                            hint=" (bytes; 0 turns the replay cache off)")


_CACHE = _Cache(_default_size())


def cache_stats() -> CacheStats:
    with _CACHE.lock:
        return CacheStats(_CACHE.hits, _CACHE.misses, _CACHE.evictions, len(_CACHE.entries),
                          _CACHE.bytes, _CACHE.max_bytes)


def set_cache_size(max_bytes: int) -> None:
    """Bound the cache at ``max_bytes`` (evicting what is over it now); 0 disables it."""
    if max_bytes < 0:
        raise ConfigError(f"the replay cache size must be >= 0 bytes, not {max_bytes}")
    with _CACHE.lock:
        _CACHE.max_bytes = max_bytes
        _CACHE.shrink()


def clear_cache() -> None:
    """Drop every entry (deleting its snapshot) and zero the counters."""
    _CACHE.clear()


def replay_reset(env: TaskEnv, seed: int | None, options: dict[str, Any]
                 ) -> tuple[dict[str, str], dict[str, Any]]:
    """``env.reset`` with a ``replay`` option (see the module's docs). ``info["replay"]`` is
    ``{"hit": bool, "cached_steps": k, "replayed_steps": m}``: ``k`` actions came from the
    cache, ``m`` were run now. The observation is the last action's (the task's instruction
    for an empty prefix)."""
    prefix = options["replay"]
    if not isinstance(prefix, list | tuple):
        raise ConfigError("reset option 'replay' takes a list of actions, not "
                          f"{type(prefix).__name__}")
    if "task_id" not in options:
        raise ConfigError("reset option 'replay' needs 'task_id' too: a prefix is replayed "
                          "on one task")
    task_id = str(options["task_id"])
    keys = _keys(env, task_id, seed, prefix)
    obs: dict[str, str] | None = None
    found, entry = _CACHE.pin_longest(keys)
    if entry is not None:
        try:  # pinned: an eviction meanwhile closes the snapshot only after this restore
            restore_env(env, entry.snap)
            obs = entry.snap.observation
        finally:
            _CACHE.unpin(entry)
    if not found:
        obs, _info = env.reset(seed=seed, options={"task_id": task_id})
    for index in range(found, len(prefix)):
        obs, _reward, terminated, truncated, info = env.step(prefix[index])
        if terminated or truncated:
            env.end_episode()
            raise ConfigError(
                f"replay action {index} ({_canonical(prefix[index])[:200]}) ended the episode"
                f"{' (' + str(info.get('error')) + ')' if info.get('error') else ''}; a replayed "
                "prefix must leave the episode running: leave out its last actions")
    if found < len(prefix):
        _CACHE.put(keys[-1], snapshot_env(env, observation=obs))
    assert obs is not None and env.task is not None
    info = {"task_id": env.task.id, "domain": env.domain, "tools": [tool.openai() for tool in env.tools],
            "step": env.steps_taken,
            "replay": {"hit": found > 0, "cached_steps": found,
                       "replayed_steps": len(prefix) - found}}
    return obs, info


def _keys(env: TaskEnv, task_id: str, seed: int | None, prefix: Any) -> list[_Key]:
    cls = type(env)
    args, kwargs = env._init_args
    config = json.dumps({"args": list(args), "kwargs": kwargs}, sort_keys=True,
                        default=_config_value)
    base = (f"{cls.__module__}.{cls.__qualname__}", config, task_id, repr(seed))
    actions = tuple(_canonical(action) for action in prefix)
    return [(*base, actions[: n + 1]) for n in range(len(actions))]


_TOKENS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
_COUNTER = itertools.count()
_KEPT: dict[int, tuple[Any, str]] = {}


def _config_value(value: Any) -> Any:
    """A constructor argument as JSON: configs by their fields, paths as text, any other
    object (a TaskSet, a Backend) by a token of its own, so only the same object matches
    (an id could be reused after it is gone; a repr could hide a difference)."""
    if isinstance(value, BaseModel):
        return {type(value).__qualname__: value.model_dump(mode="json")}
    if isinstance(value, PurePath):
        return str(value)
    try:
        token = _TOKENS.get(value)
        if token is None:
            token = _TOKENS[value] = f"{type(value).__qualname__}#{next(_COUNTER)}"
        return token
    except TypeError:  # not weakly referable: keep it, so that its id stays its own
        return _KEPT.setdefault(id(value), (value, f"{type(value).__qualname__}@{id(value)}"))[1]


def _canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"a replayed action must be a JSON value: {exc}") from exc
