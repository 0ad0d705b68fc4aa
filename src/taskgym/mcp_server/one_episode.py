"""One episode per server: what ``taskgym mcp ENV_ID`` serves over stdio.

:func:`episode_server` makes the env, starts the episode (``reset``) and returns an MCP
:class:`~mcp.server.lowlevel.Server` whose tools are exactly the env's, with the task's
instructions (the reset's observation) as the server's ``instructions``, which MCP clients
put before the model. The episode ends with ``submit`` (its outcome comes back as structured
content) or at the env's limits; calls after the end are refused with the outcome again.
The env and its sandbox are closed when the client's stream ends (the server's lifespan),
so one process serves one episode: a harness starts one process per episode.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

import taskgym
from taskgym.core.wrappers import TaskMethods
from taskgym.integrations import AFTER_END
from taskgym.mcp_server.results import error_result, mcp_tool, outcome, step_result
from taskgym.server.sessions import SessionPool

ONE_EPISODE_OVER = (AFTER_END + " ({summary}); this server serves one episode: start a new "
                    "server process for the next one")


async def episode_server(env_id: str, *, task_id: str | None = None, seed: int | None = None,
                         **make_kwargs: Any) -> Server[Any]:
    """A server of one episode of ``env_id`` (``taskgym.make(env_id, **make_kwargs)``) on
    ``task_id``, or on the task that ``seed`` draws; the env is made and reset here, before
    any client connects. Raises :class:`~taskgym.ConfigError` on a bad id or keyword."""

    def make_env() -> TaskMethods:
        return taskgym.make(env_id, **make_kwargs)

    pool = SessionPool(make_env, max_sessions=1, max_sessions_per_client=1, max_starting=1,
                       start_wait=30.0)
    session = await pool.open("stdio")
    try:
        start = await session.reset({"task_id": task_id, "seed": seed})
    except BaseException:
        await session.close()
        raise
    tools = list(session.env.unwrapped.tools)  # type: ignore[attr-defined]
    listed = [mcp_tool(tool, handle=False) for tool in tools]
    ended: dict[str, Any] = {}  # the episode's outcome, once it is over

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        if ended:
            return error_result(ONE_EPISODE_OVER.format(summary=ended["summary"]), ended)
        if session.closed:  # a client connected again after the first one left
            return error_result(ONE_EPISODE_OVER.format(
                summary="its first client left, which closed its sandbox ungraded"))
        if session.busy:
            return error_result("another call of this episode is running; wait for its result")
        try:
            payload = await session.step({"tool": params.name, "args": params.arguments or {}})
        except Exception as exc:  # taskgym's own failure: the env turns the agent's into text
            return error_result(f"taskgym failed on this call: {type(exc).__name__}: {exc}")
        if payload["done"]:
            ended.update(outcome(payload["metadata"]))
            await session.close()
        return step_result(payload)

    @asynccontextmanager
    async def lifespan(server: Server[Any]) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            await session.close()

    return Server(f"taskgym {env_id}", version=taskgym.__version__,
                  instructions=str(start["observation"]["text"]), lifespan=lifespan,
                  on_list_tools=list_tools, on_call_tool=call_tool)


async def serve_stdio(env_id: str, **options: Any) -> None:
    """Serve one episode (:func:`episode_server`'s ``options``) on this process's stdin and
    stdout until the client closes them, or until SIGTERM or SIGHUP (a harness stopping its
    server), which close the episode's sandbox too before the process ends."""
    serving = asyncio.current_task()
    assert serving is not None
    loop = asyncio.get_running_loop()
    for stop in (signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(stop, serving.cancel)
    try:
        server = await episode_server(env_id, **options)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    except asyncio.CancelledError:  # a stop signal: the lifespan has closed the episode
        if serving.uncancel():
            raise  # cancelled by something else too
    finally:
        for stop in (signal.SIGTERM, signal.SIGHUP):
            loop.remove_signal_handler(stop)

