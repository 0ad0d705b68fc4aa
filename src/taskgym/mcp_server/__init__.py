"""``taskgym mcp ENV_ID``: a taskgym env's tools over MCP, on the official ``mcp`` SDK 2.x
(docs/server.md).

- :mod:`~taskgym.mcp_server.one_episode`: :func:`episode_server`, one episode per server
  (stdio: one episode per process), its tools exactly the env's;
- :mod:`~taskgym.mcp_server.episode_handles`: :class:`EpisodeHandles`, many episodes named
  by explicit ``episode_id`` handles, for streamable HTTP (:func:`http_app`,
  :func:`serve_http`), which works with sessionless 2026-07-28 clients and legacy ones;
- :mod:`~taskgym.mcp_server.results`: taskgym steps as MCP tool results.

Needs the ``mcp`` extra (``pip install 'taskgym[mcp]'``).
"""

from __future__ import annotations

from taskgym.errors import needs_extra

with needs_extra("taskgym mcp", "mcp"):
    from taskgym.mcp_server.episode_handles import EpisodeHandles, http_app, serve_http
    from taskgym.mcp_server.one_episode import episode_server, serve_stdio

__all__ = ["EpisodeHandles", "episode_server", "http_app", "serve_http", "serve_stdio"]
