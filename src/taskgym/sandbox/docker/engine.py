"""The Docker engine as the docker backend talks to it: one client whose Unix-socket
connections are pooled for the engine, and what to do when there is no engine."""

from __future__ import annotations

from typing import Any

__all__ = ["ENGINE_CONNECTIONS", "ENGINE_HINT", "engine_client"]

ENGINE_HINT = (
    "Install an engine (`sudo apt-get install -y docker.io`) and start it (`sudo dockerd "
    "--bridge=none --iptables=false --ip-forward=false &`, or `sudo systemctl start docker`), "
    "then build the images with `taskgym images build`.")


ENGINE_CONNECTIONS = 64
"""Connections to the engine kept for reuse (more are opened when more threads call at once)."""


def engine_client() -> Any:
    """A Docker SDK client of the engine ``DOCKER_HOST`` names, whose connections over a Unix
    socket are pooled for the engine, not for each request's URL.

    docker-py (7.1) keys its Unix-socket adapter's connection pools by the whole URL, in an LRU
    of 25 that closes what it evicts: every request for a new container opened a new
    connection, and 16 threads starting containers at once evicted and closed pools that other
    threads were still reading from (an ``AttributeError`` out of urllib3, out of ``reset``).
    One pool for the engine reuses connections and is never evicted."""
    import docker
    from docker.transport.unixconn import UnixHTTPAdapter

    class EnginePool(UnixHTTPAdapter):  # type: ignore[misc]
        def get_connection(self, url: str, proxies: Any = None) -> Any:
            return super().get_connection("http+docker://localhost", proxies)

    client = docker.from_env(timeout=120, max_pool_size=ENGINE_CONNECTIONS)
    api = client.api
    adapter = api.adapters.get("http+docker://")
    if isinstance(adapter, UnixHTTPAdapter):
        api.mount("http+docker://", EnginePool(f"http+unix://{adapter.socket_path}", api.timeout,
                                               pool_connections=1,
                                               max_pool_size=ENGINE_CONNECTIONS))
        adapter.close()
    return client
