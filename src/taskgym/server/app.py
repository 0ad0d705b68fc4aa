"""The ASGI app of ``taskgym serve``: OpenEnv's routes over taskgym envs (docs/server.md).

``GET /health``, ``/metadata``, ``/schema``; ``/ws``, one session per connection speaking
OpenEnv's messages (``reset``, ``step``, ``state``, ``mcp``, ``close``; errors with OpenEnv's
codes), or attached to a session made over ``POST /mcp`` (``/ws?session_id=``,
:mod:`taskgym.server.mcp`); OpenEnv's task-listing routes (:mod:`taskgym.server.tasks`).
OpenEnv's stateless ``POST /reset``, ``/step`` and ``GET /state`` are refused with a message
that says why (a fresh env per call never reaches a graded end). The Open Reward Standard's
session routes (:mod:`taskgym.server.ors`) share the session pool. With a ``token``, every
route but ``/health`` wants ``Authorization: Bearer <token>`` (or ORS's ``X-API-Key: <token>``).
"""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route, WebSocketRoute
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

import taskgym
from taskgym.core.tool import Tool
from taskgym.core.wrappers import TaskMethods
from taskgym.server import mcp
from taskgym.server.ors import ors_routes
from taskgym.server.protocol import (
    ErrorCode,
    call_tool_fields,
    error_frame,
    list_tools_payload,
    native_action,
    schemas,
)
from taskgym.server.sessions import CapacityError, Session, SessionPool
from taskgym.server.tasks import task_routes

STATELESS_REFUSAL = (
    "taskgym serve refuses OpenEnv's stateless {route} (as OpenEnv's production mode does): "
    "it would build and close a fresh sandboxed env per call, so no step could ever reach the "
    "graded end of an episode. Open a session on the /ws WebSocket instead (OpenEnv's "
    "EnvClient / GenericEnvClient, or taskgym.remote.RemoteEnv).")


def create_app(env_id: str, *, max_sessions: int = 8, max_sessions_per_client: int | None = None,
               max_starting: int = 2, start_wait: float = 30.0, idle_timeout: float = 300.0,
               token: str | None = None, **make_kwargs: Any) -> Starlette:
    """An ASGI app serving ``env_id`` (each session's env is ``taskgym.make(env_id,
    **make_kwargs)``).

    Args:
        max_sessions: sessions open at once; one more is refused with ``CAPACITY_REACHED``.
        max_sessions_per_client: sessions of one client address at once (default: all).
        max_starting: sandbox starts (resets) at once; more wait for a slot.
        start_wait: seconds a reset waits for a start slot before ``CAPACITY_REACHED``.
        idle_timeout: seconds a session may wait for its client's next message; then the
            server says so (``SESSION_ERROR``), closes the socket and the env's sandbox.
        token: when given, the bearer token every route but ``/health`` wants.
    """
    probe = taskgym.make(env_id, **make_kwargs)  # a bad id or keyword fails here, at start
    tools = list(probe.unwrapped.tools)  # type: ignore[attr-defined]
    description = str(getattr(probe.unwrapped, "description", ""))
    task_set = probe.unwrapped.task_set  # type: ignore[attr-defined]
    probe.close()

    def make_env() -> TaskMethods:
        return taskgym.make(env_id, **make_kwargs)

    pool = SessionPool(make_env, max_sessions=max_sessions,
                       max_sessions_per_client=max_sessions_per_client or max_sessions,
                       max_starting=max_starting, start_wait=start_wait)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "healthy"})

    async def metadata(request: Request) -> Response:
        return JSONResponse({"name": env_id, "description": description,
                             "version": taskgym.__version__, "author": None,
                             "readme_content": None, "documentation_url": None,
                             "active_sessions": len(pool.sessions), "max_sessions": max_sessions})

    async def schema(request: Request) -> Response:
        return JSONResponse(schemas(tools))

    async def refused(request: Request) -> Response:
        return JSONResponse({"detail": STATELESS_REFUSAL.format(route=request.url.path)},
                            status_code=404)

    async def websocket(ws: WebSocket) -> None:
        await ws.accept()
        client = ws.client.host if ws.client is not None else "unknown"
        wanted = ws.query_params.get("session_id")
        owned = wanted is None
        try:
            session = await pool.open(client) if owned else pool.attach(str(wanted))
        except CapacityError as exc:
            await _send(ws, error_frame(ErrorCode.CAPACITY_REACHED, str(exc),
                                        active_sessions=exc.active, max_sessions=exc.limit))
            await ws.close()
            return
        except LookupError as exc:
            await _send(ws, error_frame(ErrorCode.SESSION_ERROR, str(exc.args[0])))
            await ws.close()
            return
        except Exception as exc:
            await _send(ws, error_frame(ErrorCode.FACTORY_ERROR,
                                        f"could not make {env_id}: {exc}", factory_name=env_id))
            await ws.close()
            return
        session.attached = True
        try:
            await _serve_session(ws, session, pool, tools, idle_timeout)
        except WebSocketDisconnect:
            pass
        finally:
            session.attached = False
            if owned:  # an attached session lives on until closed over /mcp or idle
                await asyncio.shield(session.close())

    async def jsonrpc(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return JSONResponse(mcp.rpc_error(mcp.PARSE_ERROR, f"Parse error: {exc}"))
        client = request.client.host if request.client is not None else "unknown"
        return JSONResponse(await mcp.handle(body, pool, tools, client))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        reaper = asyncio.create_task(pool.reap_idle(idle_timeout))
        try:
            yield
        finally:
            reaper.cancel()
            await pool.close_all()

    routes = [Route("/health", health), Route("/metadata", metadata), Route("/schema", schema),
              Route("/reset", refused, methods=["POST"]), Route("/step", refused, methods=["POST"]),
              Route("/state", refused), Route("/mcp", jsonrpc, methods=["POST"]),
              WebSocketRoute("/ws", websocket), *task_routes(env_id, task_set),
              *ors_routes(env_id, tools, task_set, pool)]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.pool = pool
    if token is not None:
        app.add_middleware(BearerToken, token=token)
    return app


async def _send(ws: WebSocket, message: dict[str, Any]) -> None:
    await ws.send_text(json.dumps(message))


async def _serve_session(ws: WebSocket, session: Session, pool: SessionPool, tools: list[Tool],
                         idle_timeout: float) -> None:
    """Answer ``ws``'s messages until it closes, sends ``close`` or stays idle too long."""
    while True:
        try:
            async with asyncio.timeout(idle_timeout):  # no task per message, as wait_for makes
                raw = await ws.receive_text()
        except TimeoutError:
            await _send(ws, error_frame(ErrorCode.SESSION_ERROR,
                                        f"no message for {idle_timeout:g} s: the session is closed "
                                        "and its sandbox stopped; open a new one"))
            await ws.close()
            return
        except KeyError:  # a binary frame: Starlette finds no "text"
            await _send(ws, error_frame(ErrorCode.INVALID_JSON, "send JSON text frames"))
            continue
        try:
            message = json.loads(raw)
        except json.JSONDecodeError as exc:
            await _send(ws, error_frame(ErrorCode.INVALID_JSON, f"Invalid JSON: {exc}"))
            continue
        if not isinstance(message, dict):
            await _send(ws, error_frame(ErrorCode.VALIDATION_ERROR,
                                        "a message is a JSON object with a 'type'"))
            continue
        kind = message.get("type")
        if kind == "close":
            await ws.close()
            return
        if kind == "mcp":
            client = ws.client.host if ws.client is not None else "unknown"
            answer = await mcp.handle(message.get("data"), pool, tools, client, session)
            await _send(ws, {"type": "mcp", "data": answer})
            continue
        await _send(ws, await _answer(session, kind, message, tools))


async def _answer(session: Session, kind: Any, message: dict[str, Any],
                  tools: list[Tool]) -> dict[str, Any]:
    """The answer to one message of a known or unknown ``kind``; never raises."""
    if kind not in ("reset", "step", "state"):
        return error_frame(ErrorCode.UNKNOWN_TYPE, f"Unknown message type: {str(kind)[:100]}; "
                           "known: reset, step, state, mcp, close")
    if kind == "state":
        return {"type": "state", "data": session.state()}
    if kind == "reset" and not isinstance(message.get("data", {}), dict):
        return error_frame(ErrorCode.VALIDATION_ERROR, "a reset message's 'data' is a JSON object")
    if kind == "step" and "data" not in message:
        return error_frame(ErrorCode.VALIDATION_ERROR, "a step message needs 'data', the action")
    try:
        if kind == "reset":
            return {"type": "observation", "data": await session.reset(message.get("data", {}))}
        # any JSON value is an action: the env judges it (a bad one is an error observation)
        action = message["data"]
        mcp_type = action.get("type") if isinstance(action, dict) else None
        if mcp_type == "list_tools":
            return {"type": "observation", "data": list_tools_payload(tools)}
        payload = await session.step(native_action(action) if mcp_type else action)
        if mcp_type == "call_tool":
            call_tool_fields(action, payload)
        return {"type": "observation", "data": payload}
    except CapacityError as exc:
        return error_frame(ErrorCode.CAPACITY_REACHED, str(exc), active_sessions=exc.active,
                           max_sessions=exc.limit)
    except taskgym.ConfigError as exc:
        return error_frame(ErrorCode.VALIDATION_ERROR, str(exc))
    except Exception as exc:
        return error_frame(ErrorCode.EXECUTION_ERROR, f"{type(exc).__name__}: {exc}")


class BearerToken:
    """ASGI middleware: every HTTP request and WebSocket but ``/health`` must carry
    ``Authorization: Bearer <token>`` or ``X-API-Key: <token>`` (how the openreward client
    sends its key); others get 401 (a WebSocket is closed before accept)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and scope["path"] != "/health":
            headers = dict(scope["headers"])
            bearer = hmac.compare_digest(headers.get(b"authorization", b""), b"Bearer " + self.token)
            api_key = hmac.compare_digest(headers.get(b"x-api-key", b""), self.token)
            if not (bearer or api_key):
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                response = JSONResponse({"detail": "send Authorization: Bearer <token> (or "
                                         "X-API-Key: <token>), the token the server was "
                                         "started with"}, status_code=401)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
