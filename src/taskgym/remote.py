"""A taskgym env served elsewhere (``taskgym serve``, or any OpenEnv server), as a
``gymnasium.Env``.

:class:`RemoteEnv` speaks OpenEnv's ``/ws`` protocol: ``reset``/``step``/``close`` block, and
``areset``/``astep``/``aclose`` are the same for asyncio (one object uses one of the two; each
opens its own WebSocket on first use). Observations are ``{"text": ...}``; ``info`` is the
server's step metadata (``info["reward"]`` the verifier's result as a mapping, and
``info["verdict"]``). Server-side refusals (capacity, a closed idle session, a bad message)
raise :class:`RemoteError` with OpenEnv's ``code``; an action the env refuses is, as in
process, an error observation. Needs the ``serve`` extra (``websockets``).
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import gymnasium as gym

from taskgym.core.spaces import UnicodeText
from taskgym.errors import ConfigError, TaskgymError, needs_extra

__all__ = ["RemoteEnv", "RemoteError"]


class RemoteError(TaskgymError):
    """The server refused a message; ``code`` is OpenEnv's error code (``CAPACITY_REACHED``,
    ``SESSION_ERROR``, ...)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


def _websockets() -> Any:
    with needs_extra("RemoteEnv", "serve"):
        import websockets
    return websockets


class RemoteEnv(gym.Env[dict[str, str], Any]):
    """An env served at ``base_url`` (``http://host:port``), over OpenEnv's ``/ws``.

    Args:
        base_url: the server's address (``http``/``https``, or ``ws``/``wss``).
        token: the server's bearer token, if it has one.
        timeout: seconds to wait for any one answer (a step's command and grading included).
    """

    def __init__(self, base_url: str, *, token: str | None = None, timeout: float = 600.0) -> None:
        url = base_url.rstrip("/")
        for http, ws in (("https://", "wss://"), ("http://", "ws://")):
            if url.startswith(http):
                url = ws + url[len(http):]
        if not url.startswith(("ws://", "wss://")):
            raise ConfigError(f"base_url must start with http(s):// or ws(s)://, not {base_url!r}")
        self.url = f"{url}/ws"
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout = timeout
        self.observation_space = gym.spaces.Dict({"text": UnicodeText()})  # type: ignore[assignment]
        self._sync: Any = None
        self._async: Any = None

    # -- blocking API -------------------------------------------------------------------
    def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        if self._async is not None:
            raise ConfigError("this RemoteEnv uses the asyncio API (areset/astep); use one API")
        if self._sync is None:
            _websockets()
            from websockets.sync.client import connect

            self._sync = connect(self.url, additional_headers=self.headers,
                                 open_timeout=self.timeout, max_size=None).__enter__()
        closed = _websockets().exceptions.ConnectionClosed
        try:
            with contextlib.suppress(closed):  # a refusal sent before closing is still read
                self._sync.send(_dumps(message))
            raw = self._sync.recv(timeout=self.timeout)
        except closed as exc:
            self._sync = None  # the next call opens a new session
            raise RemoteError(f"the server closed the session ({exc})", "SESSION_ERROR") from exc
        return self._answer(raw)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[dict[str, str], dict[str, Any]]:
        super().reset(seed=seed)
        return _reset_result(self._exchange(_reset_message(seed, options)))

    def step(self, action: Any) -> tuple[dict[str, str], float, bool, bool, dict[str, Any]]:
        return _step_result(self._exchange({"type": "step", "data": action}))

    def state(self) -> dict[str, Any]:
        """The server's state of the episode (episode id, steps, task id, done)."""
        return self._exchange({"type": "state"})

    def close(self) -> None:
        if self._sync is not None:
            connection, self._sync = self._sync, None
            try:
                connection.send(json.dumps({"type": "close"}))
            except Exception:  # already gone: nothing to close
                pass
            connection.close()

    # -- asyncio API --------------------------------------------------------------------
    async def _aexchange(self, message: dict[str, Any]) -> dict[str, Any]:
        import asyncio

        if self._sync is not None:
            raise ConfigError("this RemoteEnv uses the blocking API (reset/step); use one API")
        if self._async is None:
            self._async = await _websockets().connect(
                self.url, additional_headers=self.headers, open_timeout=self.timeout,
                max_size=None)
        closed = _websockets().exceptions.ConnectionClosed
        try:
            with contextlib.suppress(closed):  # a refusal sent before closing is still read
                await self._async.send(_dumps(message))
            async with asyncio.timeout(self.timeout):  # no task per answer, as wait_for makes
                raw = await self._async.recv()
        except closed as exc:
            self._async = None  # the next call opens a new session
            raise RemoteError(f"the server closed the session ({exc})", "SESSION_ERROR") from exc
        return self._answer(raw)

    def _answer(self, raw: str | bytes) -> dict[str, Any]:
        """The data of an answer; a server's error frame raised as :class:`RemoteError` (after
        a refusal that ends the session, the next call opens a new one)."""
        try:
            return _data(raw)
        except RemoteError as exc:
            if exc.code in ("CAPACITY_REACHED", "SESSION_ERROR", "FACTORY_ERROR"):
                self._sync = self._async = None
            raise

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
                     ) -> tuple[dict[str, str], dict[str, Any]]:
        """:meth:`reset` for asyncio."""
        super().reset(seed=seed)
        return _reset_result(await self._aexchange(_reset_message(seed, options)))

    async def astep(self, action: Any) -> tuple[dict[str, str], float, bool, bool, dict[str, Any]]:
        """:meth:`step` for asyncio."""
        return _step_result(await self._aexchange({"type": "step", "data": action}))

    async def aclose(self) -> None:
        """:meth:`close` for asyncio."""
        if self._async is not None:
            connection, self._async = self._async, None
            try:
                await connection.send(json.dumps({"type": "close"}))
            except Exception:  # already gone: nothing to close
                pass
            await connection.close()


def _reset_message(seed: int | None, options: dict[str, Any] | None) -> dict[str, Any]:
    data: dict[str, Any] = {"seed": seed} if seed is not None else {}
    if options:
        data["options"] = options
    return {"type": "reset", "data": data}


def _dumps(message: dict[str, Any]) -> str:
    """A message as JSON; what JSON cannot hold goes as its ``repr``, for the server's env to
    judge as it would in process (an error observation)."""
    return json.dumps(message, default=repr)


def _data(raw: str | bytes) -> dict[str, Any]:
    message = json.loads(raw)
    data: dict[str, Any] = message.get("data", {})
    if message.get("type") == "error":
        raise RemoteError(str(data.get("message")), str(data.get("code")))
    return data


def _reset_result(data: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    info = dict(data.get("metadata") or {})
    info.pop("terminated", None)
    info.pop("truncated", None)
    return {"text": data["observation"]["text"]}, info


def _step_result(data: dict[str, Any]) -> tuple[dict[str, str], float, bool, bool, dict[str, Any]]:
    info = dict(data.get("metadata") or {})
    terminated = bool(info.pop("terminated", data.get("done", False)))
    truncated = bool(info.pop("truncated", False))
    return {"text": data["observation"]["text"]}, float(data.get("reward") or 0.0), \
        terminated, truncated, info
