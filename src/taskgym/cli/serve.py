"""``taskgym serve ENV_ID``: the env over OpenEnv's protocol (:mod:`taskgym.server`)."""

from __future__ import annotations

import argparse
from typing import Any

from taskgym.cli.options import add_bind_options, add_capacity_options, add_env_options, positive_int


def add_serve_parser(sub: Any) -> None:
    """Add the ``serve`` subcommand to ``sub`` (the CLI's subparsers)."""
    serve = sub.add_parser("serve", help="serve an env over OpenEnv's protocol (/ws, /schema...)")
    serve.add_argument("env_id")
    add_bind_options(serve)
    add_capacity_options(serve, "sessions", "a session", "one env and sandbox each", "a message")
    serve.add_argument("--max-starting", type=positive_int, default=2,
                       help="sandbox starts (resets) at once; more wait for a slot (default 2)")
    serve.add_argument("--start-wait", type=float, default=30.0,
                       help="seconds a reset waits for a start slot before CAPACITY_REACHED "
                            "(default 30)")
    add_env_options(serve)
    serve.set_defaults(func=cmd_serve)


def cmd_serve(args: argparse.Namespace) -> int:
    from taskgym.server import serve

    make_kwargs = {key: value for key, value in (("tasks", args.tasks),
                                                 ("max_steps", args.max_steps)) if value}
    serve(args.env_id, host=args.host, port=args.port, token=args.token,
          max_sessions=args.max_sessions, max_sessions_per_client=args.max_sessions_per_client,
          max_starting=args.max_starting, start_wait=args.start_wait,
          idle_timeout=args.idle_timeout, sandbox=args.sandbox, **make_kwargs)
    return 0
