"""A real ``taskgym serve`` app on uvicorn, on 127.0.0.1 and a free port, in a thread of the
test process (so :func:`taskgym.checks.host_state` sees its sandboxes)."""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from websockets.sync.client import ClientConnection, connect

from taskgym.server import create_app


class Served:
    """A running server: its base URL, app and a WebSocket opener."""

    def __init__(self, server: uvicorn.Server, port: int) -> None:
        self.server, self.port = server, port
        self.url = f"http://127.0.0.1:{port}"
        self.app: Any = server.config.app

    def ws(self, **headers: str) -> ClientConnection:
        return connect(f"ws://127.0.0.1:{self.port}/ws", additional_headers=headers,
                       open_timeout=30)

    @staticmethod
    def http(url: str, body: Any = None, **headers: str) -> tuple[int, Any]:
        """GET ``url`` (POST ``body``: JSON unless already bytes): the status and the JSON
        answer, an error status's too."""
        data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
        request = urllib.request.Request(url, data=data, headers=headers,
                                         method="GET" if body is None else "POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read())
            finally:
                exc.close()  # its connection, else a ResourceWarning when it is collected


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture()
def answer_tasks(tmp_path: Path, answer_task: Callable[..., Path]) -> str:
    """A task folder set with one task, ``answer`` (42 in /app/answer.txt)."""
    answer_task(tmp_path / "tasks" / "answer")
    return str(tmp_path / "tasks")


@pytest.fixture()
def serve(answer_tasks: str, local_backend: Any) -> Iterator[Callable[..., Served]]:
    """Start a server of coding-terminal-v0 on the answer task (keywords: create_app's;
    ``tasks=None`` serves the curated tasks)."""
    servers: list[tuple[uvicorn.Server, threading.Thread]] = []

    def start(**options: Any) -> Served:
        app = create_app("coding-terminal-v0", **{"tasks": answer_tasks, **options})
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                               log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        servers.append((server, thread))
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        return Served(server, port)

    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=60)

