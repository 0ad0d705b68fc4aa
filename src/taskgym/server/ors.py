"""The Open Reward Standard (ORS) routes of ``taskgym serve``, beside OpenEnv's (docs/server.md).

ORS is HTTP with Server-Sent Events: a client asks ``POST /create_session`` for a session id
(an SSE stream of one ``task_id`` event), then ``POST /create`` with that id in the
``X-Session-ID`` header and a task (a listed ``task_spec``, or ``split`` and ``index``), reads
``GET /{env}/prompt`` and ``/{env}/tools``, and calls tools with ``POST /{env}/call``, whose
answer is an SSE stream (``task_id``, ``chunk``... ``end``) of a ``RunToolOutput``: a
``ToolOutput`` (``blocks``, ``metadata``, ``reward``, ``finished``) or an error with its
``reason``. ``POST /ping`` keeps a session alive, ``POST /delete`` ends it. The listing routes
(``/list_environments``, ``/{env}/splits``, ``tasks``, ``num_tasks``, ``task``,
``task_range``) are :mod:`taskgym.server.tasks`' (OpenEnv's task API is ORS's).

An ORS session is a :class:`~taskgym.server.sessions.Session` of the server's pool: the same
limits, idle timeout (a ping counts as activity) and token. A tool call is one env step; the
step that ends the episode carries the verified reward and ``finished``; an end with no
verdict (the environment failed) carries no reward (``null``), and its ``metadata`` says
``verdict: "none"``, the ``failure`` class and the ``error``.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import taskgym
from taskgym.core.task import TaskSet
from taskgym.core.tool import Tool
from taskgym.errors import ConfigError
from taskgym.server.protocol import mcp_tool
from taskgym.server.sessions import CapacityError, Session, SessionPool
from taskgym.server.tasks import SPLIT, detail, json_object

HEARTBEAT_SECONDS = 10.0
"""A comment line on a call's stream this often while the step runs: the openreward client
gives up on a stream silent for 30 s."""
CHUNK_CHARS = 4096
"""The size of a call's answer's SSE ``chunk`` events (the client reads the stream by lines)."""

Events = list[tuple[str, str]]


@dataclass
class OrsSession:
    """A pool session seen through ORS: its prompt and its latest tool call (whose events a
    client that lost the stream gets again by sending the call's ``task_id``)."""

    session: Session
    prompt: str = ""
    call_id: str | None = None
    call: asyncio.Task[Events] | None = field(default=None, repr=False)


def ors_routes(env_id: str, tools: list[Tool], task_set: TaskSet,
               pool: SessionPool) -> list[Route]:
    """The ORS session routes for ``env_id``'s sessions in ``pool``."""
    live: dict[str, OrsSession] = {}
    names = [tool.name for tool in tools]
    tool_list = {"tools": [mcp_tool(tool) for tool in tools], "terminal_tool": None,
                 "supports_score_group": False, "message_block_types": ["text"]}

    def session_of(request: Request) -> OrsSession | Response:
        sid = request.headers.get("x-session-id", "").strip()
        if not sid:
            return detail(400, "send the session's id in the X-Session-ID header")
        found = live.get(sid)
        if found is None:
            return detail(404, f"no session {sid[:100]}: create one with POST /create_session, "
                          "then POST /create")
        if found.session.closed:
            del live[sid]
            return detail(410, "the session is closed (deleted, or idle for longer than the "
                          "server's idle timeout) and its sandbox stopped; create a new one")
        return found

    def wrong_env(request: Request) -> Response | None:
        name = str(request.path_params["env"])
        if name.lower() == env_id.lower():
            return None
        return detail(404, f"unknown environment {name[:100]!r}; this server serves {env_id}")

    async def task_of(body: dict[str, Any]) -> str | Response:
        """The task id ``/create``'s body names, or the error response."""
        name = body.get("env_name")
        if name is not None and str(name).lower() != env_id.lower():
            return detail(404, f"unknown environment {str(name)[:100]!r}; this server serves "
                          f"{env_id}")
        spec, split, index = body.get("task_spec"), body.get("split"), body.get("index")
        if spec is not None:
            if isinstance(spec, dict) and isinstance(spec.get("task_id"), str):
                return str(spec["task_id"])
            return detail(400, "a task_spec is a listed task, {\"task_id\": ...} (from "
                          f"POST /{env_id}/tasks)")
        if split != SPLIT:
            return detail(400, f"give a task_spec, or split {SPLIT!r} and an index")
        ids = await asyncio.to_thread(task_set.ids)
        if type(index) is not int or not 0 <= index < len(ids):
            return detail(400, f"Invalid index: give 'index', 0 to {len(ids) - 1}")
        return ids[index]

    async def create(request: Request) -> Response:
        sid = request.headers.get("x-session-id", "").strip()
        if not sid:
            return detail(400, "send the id from POST /create_session in the X-Session-ID header")
        for closed in [key for key, seen in live.items() if seen.session.closed]:
            del live[closed]
        if sid in live:
            return detail(400, "Session already exists")
        body = await json_object(request, 422)
        if isinstance(body, Response):
            return body
        task_id = await task_of(body)
        if isinstance(task_id, Response):
            return task_id
        client = request.client.host if request.client is not None else "unknown"
        try:
            session = await pool.open(client)
        except CapacityError as exc:
            return detail(429, str(exc), headers={"Retry-After": "1"})
        except Exception as exc:
            return detail(500, f"could not make {env_id}: {exc}")
        entry = live[sid] = OrsSession(session)
        try:
            payload = await session.reset({"task_id": task_id})
        except BaseException as exc:
            live.pop(sid, None)
            await asyncio.shield(session.close())
            if isinstance(exc, CapacityError):
                return detail(429, str(exc), headers={"Retry-After": "1"})
            if isinstance(exc, ConfigError):
                return detail(400, str(exc))
            if isinstance(exc, Exception):
                return detail(500, f"the reset failed: {type(exc).__name__}: {exc}")
            raise
        entry.prompt = str(payload["observation"].get("text", ""))
        return JSONResponse({"sid": sid})

    async def delete(request: Request) -> Response:
        sid = request.headers.get("x-session-id", "").strip()
        found = live.pop(sid, None)
        if found is not None:
            await asyncio.shield(found.session.close())
        return JSONResponse({"sid": sid})

    async def ping(request: Request) -> Response:
        found = session_of(request)
        if isinstance(found, Response):
            return found
        found.session.last_active = time.monotonic()
        return JSONResponse({"status": "ok"})

    async def create_session(request: Request) -> Response:
        return event_stream([("task_id", uuid.uuid4().hex), ("end", "")])

    async def acknowledged(request: Request) -> Response:
        return JSONResponse({"sid": request.headers.get("x-session-id", "").strip()})

    async def version(request: Request) -> Response:
        return JSONResponse({"version": taskgym.__version__, "build_sha": None})

    async def env_tools(request: Request) -> Response:
        return wrong_env(request) or JSONResponse(tool_list)

    async def task_tools(request: Request) -> Response:
        found = wrong_env(request) or session_of(request)
        return found if isinstance(found, Response) else JSONResponse(tool_list)

    async def prompt(request: Request) -> Response:
        found = wrong_env(request) or session_of(request)
        if isinstance(found, Response):
            return found
        return JSONResponse([{"type": "text", "text": found.prompt, "detail": None}])

    async def run_call(session: Session, name: str, args: dict[str, Any]) -> Events:
        """The events answering one call (never raises: an exception is an ``error``)."""
        if name not in names:
            result: dict[str, Any] = {
                "ok": False, "reason": "not_found",
                "error": f"{name[:100]!r} is not a valid tool; the tools: {', '.join(names)}"}
        elif session.done:
            result = {"ok": False, "reason": "episode_finished",
                      "error": "the episode is finished; delete this session and create one "
                               "for another episode"}
        else:
            try:
                payload = await session.step({"tool": name, "args": args})
            except Exception as exc:
                return [("error", one_line(f"{type(exc).__name__}: {exc}"))]
            result = {"ok": True, "output": tool_output(payload)}
        return answer_events(json.dumps(result, separators=(",", ":")))

    async def call(request: Request) -> Response:
        found = wrong_env(request) or session_of(request)
        if isinstance(found, Response):
            return found
        body = await json_object(request, 422)
        if isinstance(body, Response):
            return body
        resumed = body.get("task_id")
        if resumed is not None:
            if resumed != found.call_id or found.call is None:
                return event_stream([("error", "unknown task_id")])
            return call_stream(str(resumed), found.call)
        name, args = body.get("name"), body.get("input", {})
        if not isinstance(name, str) or not isinstance(args, dict):
            return detail(422, "a tool call is {\"name\": <a tool>, \"input\": {<arguments>}}")
        if found.call is not None and not found.call.done():
            return detail(409, "a tool call of this session is still running: wait for its "
                          "answer (or resume its stream with its task_id)")
        found.call_id = uuid.uuid4().hex
        found.call = asyncio.create_task(run_call(found.session, name, args))
        return call_stream(found.call_id, found.call)

    return [Route("/create_session", create_session, methods=["POST"]),
            Route("/create", create, methods=["POST"]),
            Route("/ping", ping, methods=["POST"]),
            Route("/delete", delete, methods=["POST"]),
            Route("/delete_session", acknowledged, methods=["POST"]),
            Route("/version", version),
            Route("/{env}/tools", env_tools),
            Route("/{env}/task_tools", task_tools),
            Route("/{env}/prompt", prompt),
            Route("/{env}/call", call, methods=["POST"])]


def tool_output(payload: dict[str, Any]) -> dict[str, Any]:
    """A step's OpenEnv payload (:func:`~taskgym.server.protocol.step_payload`) as ORS's
    ``ToolOutput``: the reward only on the graded end of the episode, ``null`` otherwise."""
    metadata = payload["metadata"]
    finished = bool(payload["done"])
    graded = finished and metadata.get("verdict") == "graded"
    return {"blocks": [{"type": "text", "text": str(payload["observation"].get("text", "")),
                        "detail": None}],
            "metadata": metadata, "reward": payload["reward"] if graded else None,
            "finished": finished}


def answer_events(text: str) -> Events:
    """``text`` as ``chunk`` events and a last ``end``, none starting with a space (the
    client strips a data line's leading spaces)."""
    events: Events = []
    start = 0
    while start < len(text):
        stop = min(start + CHUNK_CHARS, len(text))
        while stop < len(text) and text[stop] == " ":
            stop += 1
        events.append(("chunk", text[start:stop]))
        start = stop
    events[-1] = ("end", events[-1][1])
    return events


def one_line(text: str) -> str:
    return " ".join(text.splitlines())


def sse(event: str, data: str) -> bytes:
    """One SSE event (``data`` is one line)."""
    return f"event: {event}\ndata: {data}\n\n".encode()


def event_stream(events: Events) -> StreamingResponse:
    async def lines() -> AsyncIterator[bytes]:
        for event, data in events:
            yield sse(event, data)

    return StreamingResponse(lines(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})


def call_stream(call_id: str, call: asyncio.Task[Events]) -> StreamingResponse:
    """The stream of a call: its ``task_id``, a comment every :data:`HEARTBEAT_SECONDS`
    while it runs, then its events. A client that goes away leaves the step running."""

    async def lines() -> AsyncIterator[bytes]:
        yield sse("task_id", call_id)
        while not (await asyncio.wait({call}, timeout=HEARTBEAT_SECONDS))[0]:
            yield b": ping\n\n"
        events = call.result() if not call.cancelled() else [("error", "the call was cancelled")]
        for event, data in events:
            yield sse(event, data)

    return StreamingResponse(lines(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache"})
