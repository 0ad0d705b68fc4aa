"""``taskgym serve``: taskgym envs over OpenEnv's protocol (docs/server.md).

:func:`create_app` builds the ASGI app (Starlette); :func:`serve` runs it on uvicorn. The
server binds 127.0.0.1 unless told otherwise, and refuses to start on any other address
without a token. Needs the ``serve`` extra (``pip install 'taskgym[serve]'``).
"""

from __future__ import annotations

import ipaddress
from typing import Any

from taskgym.errors import ConfigError, needs_extra

with needs_extra("taskgym serve", "serve"):
    from taskgym.server.app import create_app

__all__ = ["DESCRIPTORS_PER_SESSION", "check_descriptors", "create_app", "is_loopback", "require_token",
           "serve"]

DESCRIPTORS_PER_SESSION = 10
"""Open descriptors one session of a local-sandbox env holds in the server (its WebSocket, the
sandbox's pipes, status socket, output files and cgroup): 9 measured with 1,000 sessions
(benchmarks/serve_concurrency.py), rounded up."""
_SPARE_DESCRIPTORS = 256  # the listening socket, logs, grading, a task set's files


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost``, 127.0.0.0/8, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def require_token(host: str, token: str | None) -> None:
    """Raise :class:`~taskgym.ConfigError` when ``host`` is not loopback and no ``token`` is
    given (``taskgym serve`` and ``taskgym mcp --transport http`` both bind through this)."""
    if not is_loopback(host) and not token:
        raise ConfigError(f"serving on {host} makes the env reachable from other machines: give "
                          "a token (--token, or TASKGYM_SERVE_TOKEN), which clients send as "
                          "'Authorization: Bearer <token>', or bind 127.0.0.1")


def serve(env_id: str, *, host: str = "127.0.0.1", port: int = 8000, token: str | None = None,
          **options: Any) -> None:
    """Serve ``env_id`` on ``host:port`` until interrupted (``options``: :func:`create_app`'s).

    Raises :class:`~taskgym.ConfigError` when ``host`` is not loopback and no token is given.
    """
    require_token(host, token)
    check_descriptors(int(options.get("max_sessions", 8)), options.get("sandbox", "local"))
    import uvicorn

    app = create_app(env_id, token=token, **options)
    uvicorn.run(app, host=host, port=port, log_level="info", ws_max_size=100 * 2**20)


def check_descriptors(max_sessions: int, sandbox: Any = "local") -> int:
    """Raise this process's open-files limit to its hard limit, and refuse (``ConfigError``)
    a ``max_sessions`` of local sandboxes that it cannot hold (:data:`DESCRIPTORS_PER_SESSION`
    each, and a margin): past it, new connections and sandbox starts would fail mid-run.
    Returns the limit. Another backend's sessions hold fewer descriptors here; they are not
    refused."""
    from taskgym.sandbox.local.launch import raise_open_files_limit

    limit = raise_open_files_limit()
    need = max_sessions * DESCRIPTORS_PER_SESSION + _SPARE_DESCRIPTORS
    if sandbox in (None, "local") and limit < need:
        fits = max(1, (limit - _SPARE_DESCRIPTORS) // DESCRIPTORS_PER_SESSION)
        raise ConfigError(
            f"{max_sessions} sessions of local sandboxes need about {need} open descriptors, "
            f"but this process may open {limit} (RLIMIT_NOFILE, its hard limit included): raise "
            f"it (`ulimit -Hn {need}` as root, or LimitNOFILE= in a systemd unit) or serve at "
            f"most --max-sessions {fits}")
    return limit
