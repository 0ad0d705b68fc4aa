"""Options that several ``taskgym`` subcommands take, written once: the env's (task set,
sandbox, step budget), a server's address and token, and a server's capacity."""

from __future__ import annotations

import argparse
import os
from typing import Any

__all__ = ["add_bind_options", "add_capacity_options", "add_env_options", "positive_int"]


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


def add_env_options(parser: Any) -> None:
    """``--tasks``, ``--sandbox`` and ``--max-steps``: the env a command makes."""
    parser.add_argument("--tasks", help="task folder(s), or a named set such as 'generated'")
    parser.add_argument("--sandbox", default="local")
    parser.add_argument("--max-steps", type=positive_int)


def add_bind_options(parser: Any) -> None:
    """``--host``, ``--port`` and ``--token``: where a server listens, and the token it wants
    off loopback (``taskgym serve`` and ``taskgym mcp --transport http``)."""
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1; any other needs --token)")
    parser.add_argument("--port", type=positive_int, default=8000)
    parser.add_argument("--token", default=os.environ.get("TASKGYM_SERVE_TOKEN"),
                        help="bearer token clients must send (default: $TASKGYM_SERVE_TOKEN)")


def add_capacity_options(parser: Any, unit: str, one: str, holds: str, idle: str) -> None:
    """``--max-UNIT``, ``--max-UNIT-per-client`` and ``--idle-timeout``: how many ``unit``
    (each holding ``holds``) a server keeps live, in all and per client address, and how long
    ``one`` of them may go without ``idle`` before it is closed."""
    parser.add_argument(f"--max-{unit}", type=positive_int, default=8,
                        help=f"{unit} ({holds}) live at once (default 8)")
    parser.add_argument(f"--max-{unit}-per-client", type=positive_int,
                        help=f"live {unit} of one client address (default: --max-{unit})")
    parser.add_argument("--idle-timeout", type=float, default=300.0,
                        help=f"seconds {one} may go without {idle} before it is closed "
                             "(default 300)")
