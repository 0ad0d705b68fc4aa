"""``taskgym serve ENV_ID``: the env over OpenEnv's protocol (:mod:`taskgym.server`)."""

from __future__ import annotations

import argparse
import os
from typing import Any


def add_bind_options(parser: Any, positive_int: Any) -> None:
    """``--host``, ``--port`` and ``--token``: where a server listens, and the token it wants
    off loopback (``taskgym serve`` and ``taskgym mcp --transport http``)."""
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1; any other needs --token)")
    parser.add_argument("--port", type=positive_int, default=8000)
    parser.add_argument("--token", default=os.environ.get("TASKGYM_SERVE_TOKEN"),
                        help="bearer token clients must send (default: $TASKGYM_SERVE_TOKEN)")


def add_serve_parser(sub: Any, positive_int: Any) -> None:
    """Add the ``serve`` subcommand to ``sub`` (the CLI's subparsers)."""
    serve = sub.add_parser("serve", help="serve an env over OpenEnv's protocol (/ws, /schema...)")
    serve.add_argument("env_id")
    add_bind_options(serve, positive_int)
    serve.add_argument("--max-sessions", type=positive_int, default=8,
                       help="sessions (one env and sandbox each) open at once (default 8)")
    serve.add_argument("--max-sessions-per-client", type=positive_int,
                       help="sessions of one client address at once (default: --max-sessions)")
    serve.add_argument("--max-starting", type=positive_int, default=2,
                       help="sandbox starts (resets) at once; more wait for a slot (default 2)")
    serve.add_argument("--start-wait", type=float, default=30.0,
                       help="seconds a reset waits for a start slot before CAPACITY_REACHED "
                            "(default 30)")
    serve.add_argument("--idle-timeout", type=float, default=300.0,
                       help="seconds a session may go without a message (default 300)")
    serve.add_argument("--tasks", help="task folder(s), or a named set such as 'generated'")
    serve.add_argument("--sandbox", default="local")
    serve.add_argument("--max-steps", type=positive_int)
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
