"""Sessions of ``taskgym serve``: one env per session, and the limits on them.

A :class:`Session` is one client's episode stream: its own env (made with the server's
``make`` keywords), driven with the env's asyncio API (``areset``/``astep``/``aclose``), so no
thread is held per session. :class:`SessionPool` enforces the server's limits: at most
``max_sessions`` sessions, at most ``max_sessions_per_client`` from one client address, and
at most ``max_starting`` sandbox starts (resets) at once; a reset that waits longer than
``start_wait`` for a start slot is refused with a capacity error instead of queueing forever.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from taskgym.core.wrappers import TaskMethods
from taskgym.errors import ConfigError
from taskgym.server.protocol import RESET_KEYS, step_payload


class CapacityError(Exception):
    """The server is at one of its limits; ``str()`` says which and what to do."""

    def __init__(self, message: str, active: int, limit: int) -> None:
        super().__init__(message)
        self.active, self.limit = active, limit


class Session:
    """One client's env and the OpenEnv state of its episode."""

    def __init__(self, env: TaskMethods, client: str, pool: SessionPool) -> None:
        self.id = uuid.uuid4().hex
        self.env, self.client, self.pool = env, client, pool
        self.episode_id: str | None = None
        self.step_count = 0
        self.done = True
        self.closed = False
        self.attached = False  # a WebSocket serves this session (see SessionPool.reap_idle)
        self.last_active = time.monotonic()
        self.running = 0  # resets and steps under way, those waiting for a start slot too

    @property
    def busy(self) -> bool:
        """A reset or step is under way (the idle reaper leaves the session alone)."""
        return self.running > 0

    @contextmanager
    def _in_use(self) -> Iterator[None]:
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            self.last_active = time.monotonic()

    async def reset(self, data: dict[str, Any]) -> dict[str, Any]:
        """Start an episode (``data``: see :data:`~taskgym.server.protocol.RESET_KEYS`)."""
        unknown = sorted(set(data) - set(RESET_KEYS))
        if unknown:
            raise ConfigError(f"unknown reset field(s) {', '.join(map(repr, unknown))}; "
                              f"known: {', '.join(RESET_KEYS)}")
        seed, options, task_id = data.get("seed"), data.get("options") or {}, data.get("task_id")
        if seed is not None and (type(seed) is not int or seed < 0):
            raise ConfigError(f"seed must be a non-negative integer, not {str(seed)[:100]!r}")
        if not isinstance(options, dict):
            raise ConfigError("options must be a JSON object (such as {\"task_id\": ...})")
        if task_id is not None and not isinstance(task_id, str):
            raise ConfigError(f"task_id must be a string, not {str(task_id)[:100]!r}")
        options = dict(options)
        if task_id is not None:
            options["task_id"] = data["task_id"]
        with self._in_use():
            async with self.pool.start_slot():
                obs, info = await self.env.areset(seed=seed, options=options or None)
        episode_id = data.get("episode_id")
        self.episode_id = str(episode_id) if episode_id is not None else uuid.uuid4().hex
        self.step_count, self.done = 0, False
        self.last_active = time.monotonic()
        return step_payload(obs, None, False, False, info)

    async def step(self, action: Any) -> dict[str, Any]:
        """One step; anything the agent sends becomes an observation, never an exception."""
        with self._in_use():
            obs, reward, terminated, truncated, info = await self.env.astep(action)
        self.step_count += 1
        self.done = terminated or truncated
        self.last_active = time.monotonic()
        return step_payload(obs, float(reward), terminated, truncated, info)

    def state(self) -> dict[str, Any]:
        """OpenEnv's ``State`` of the episode, with taskgym's task id."""
        task = self.env.unwrapped.task  # type: ignore[attr-defined]
        return {"episode_id": self.episode_id, "step_count": self.step_count,
                "task_id": None if task is None else task.id, "done": self.done}

    async def close(self) -> None:
        """Close the env (stopping its sandbox); once."""
        if not self.closed:
            self.closed = True
            try:
                await self.env.aclose()
            finally:
                self.pool.release(self)


class SessionPool:
    """The live sessions of a server and its limits (see the module's docstring)."""

    def __init__(self, make_env: Callable[[], TaskMethods], *, max_sessions: int,
                 max_sessions_per_client: int, max_starting: int, start_wait: float) -> None:
        for name, value in (("max_sessions", max_sessions), ("max_starting", max_starting),
                            ("max_sessions_per_client", max_sessions_per_client)):
            if value < 1:
                raise ConfigError(f"{name} must be at least 1, not {value}")
        self.make_env = make_env
        self.max_sessions, self.max_per_client = max_sessions, max_sessions_per_client
        self.max_starting, self.start_wait = max_starting, start_wait
        self.sessions: dict[str, Session] = {}
        self._per_client: Counter[str] = Counter()
        self._pending = 0  # sessions whose env is being made
        self._starts = asyncio.Semaphore(max_starting)

    def reserve(self, client: str) -> None:
        """Count a new session of ``client``, or raise :class:`CapacityError`."""
        active = len(self.sessions) + self._pending
        if active >= self.max_sessions:
            raise CapacityError(f"the server is at its limit of {self.max_sessions} sessions; "
                                "close one or retry later", active, self.max_sessions)
        if self._per_client[client] >= self.max_per_client:
            raise CapacityError(f"client {client} already has {self._per_client[client]} "
                                f"sessions, the limit per client; close one first",
                                self._per_client[client], self.max_per_client)
        self._per_client[client] += 1
        self._pending += 1

    async def open(self, client: str) -> Session:
        """A new session of ``client`` with its own env (:class:`CapacityError` at a limit;
        the factory's own exception when the env cannot be made)."""
        self.reserve(client)
        try:
            env = await asyncio.to_thread(self.make_env)
        except BaseException:
            self._per_client[client] -= 1
            raise
        finally:
            self._pending -= 1
        session = Session(env, client, self)
        self.sessions[session.id] = session
        return session

    def attach(self, session_id: str) -> Session:
        """The session ``session_id`` (made over ``/mcp``) for a WebSocket to serve;
        ``LookupError`` when there is none or a socket serves it already."""
        session = self.sessions.get(session_id)
        if session is None:
            raise LookupError(f"Unknown session_id: {session_id[:100]}; create one with "
                              "openenv/session/create over POST /mcp")
        if session.attached:
            raise LookupError(f"Session {session_id} already has an attached WebSocket")
        return session

    def release(self, session: Session) -> None:
        if self.sessions.pop(session.id, None) is not None:
            self._per_client[session.client] -= 1

    def start_slot(self) -> _StartSlot:
        """A context manager holding one of the ``max_starting`` sandbox-start slots."""
        return _StartSlot(self)

    async def reap_idle(self, idle_timeout: float) -> None:
        """Forever: close the sessions no WebSocket serves (made by ``/mcp``'s
        ``openenv/session/create``) once idle for ``idle_timeout`` seconds. A served session's
        socket keeps its own idle timeout."""
        while True:
            await asyncio.sleep(min(1.0, idle_timeout / 4))
            now = time.monotonic()
            idle = [s for s in self.sessions.values()
                    if not s.attached and not s.busy and now - s.last_active > idle_timeout]
            await asyncio.gather(*(s.close() for s in idle), return_exceptions=True)

    async def close_all(self) -> None:
        await asyncio.gather(*(s.close() for s in list(self.sessions.values())),
                             return_exceptions=True)


class _StartSlot:
    def __init__(self, pool: SessionPool) -> None:
        self.pool = pool

    async def __aenter__(self) -> None:
        pool = self.pool
        try:
            await asyncio.wait_for(pool._starts.acquire(), pool.start_wait)
        except TimeoutError:
            raise CapacityError(
                f"{pool.max_starting} sandboxes are starting already and none finished within "
                f"{pool.start_wait:g} s; retry the reset later", pool.max_starting,
                pool.max_starting) from None

    async def __aexit__(self, *exc: object) -> None:
        self.pool._starts.release()
