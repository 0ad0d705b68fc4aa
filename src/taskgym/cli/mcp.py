"""``taskgym mcp ENV_ID``: the env's tools over MCP (:mod:`taskgym.mcp_server`)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from taskgym.cli.options import add_bind_options, add_capacity_options, add_env_options

MCP_HELP = """\
transports:
  stdio  (default) one episode per process: the env is made and reset on the task of --task
         (or the one --seed draws) when the process starts; its tools are the env's own; the
         task's instructions are the server's MCP instructions; the sandbox is closed when the
         client closes the stream. A harness starts one process per episode.
  http   streamable HTTP at http://HOST:PORT/mcp, many episodes: start_episode(task_id?, seed?)
         returns the task and an episode_id that every env tool takes; submit returns the
         reward; end_episode stops an episode ungraded. Works with sessionless (2026-07-28)
         and legacy session clients alike. Any host but loopback needs --token.

examples:
  taskgym mcp coding-terminal-v0 --tasks generated --seed 3
  taskgym mcp coding-terminal-v0 --transport http --port 8765 --max-episodes 16"""


def add_mcp_parser(sub: Any) -> None:
    """Add the ``mcp`` subcommand to ``sub`` (the CLI's subparsers)."""
    mcp = sub.add_parser("mcp", help="serve an env's tools over MCP (stdio or streamable HTTP)",
                         description="Serve an env's tools to MCP clients and agent harnesses "
                         "(the mcp extra: pip install 'taskgym[mcp]').", epilog=MCP_HELP,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    mcp.add_argument("env_id")
    mcp.add_argument("--transport", choices=["stdio", "http"], default="stdio")
    add_env_options(mcp)
    stdio = mcp.add_argument_group("stdio")
    stdio.add_argument("--task", help="the episode's task id (default: drawn with --seed)")
    stdio.add_argument("--seed", type=int, help="seed of the task draw")
    http = mcp.add_argument_group("http")
    add_bind_options(http)
    add_capacity_options(http, "episodes", "an episode", "one sandbox each", "a call")
    mcp.set_defaults(func=cmd_mcp)


def cmd_mcp(args: argparse.Namespace) -> int:
    from taskgym.errors import ConfigError
    from taskgym.mcp_server import serve_http, serve_stdio

    make_kwargs: dict[str, Any] = {key: value for key, value in (
        ("tasks", args.tasks), ("max_steps", args.max_steps)) if value}
    if args.transport == "stdio":
        asyncio.run(serve_stdio(args.env_id, task_id=args.task, seed=args.seed,
                                sandbox=args.sandbox, **make_kwargs))
        return 0
    if args.task is not None or args.seed is not None:
        raise ConfigError("--task and --seed choose the one episode of --transport stdio; over "
                          "http each client picks its task with start_episode(task_id, seed)")
    serve_http(args.env_id, host=args.host, port=args.port, token=args.token,
               max_episodes=args.max_episodes,
               max_episodes_per_client=args.max_episodes_per_client,
               idle_timeout=args.idle_timeout, sandbox=args.sandbox, **make_kwargs)
    return 0
