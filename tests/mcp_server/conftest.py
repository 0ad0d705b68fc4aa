"""``taskgym mcp`` servers for the tests: in process, and over streamable HTTP on uvicorn on
127.0.0.1 (in a thread of the test process, so :func:`taskgym.checks.host_state` sees
their sandboxes)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from taskgym.mcp_server import http_app


@pytest.fixture()
def answer_tasks(tmp_path: Path, answer_task: Callable[..., Path]) -> str:
    """A task folder set with one task, ``answer`` (42 in /app/answer.txt)."""
    answer_task(tmp_path / "tasks" / "answer")
    return str(tmp_path / "tasks")


class ServedMCP:
    """A running ``taskgym mcp --transport http`` app: its URL (``/mcp``) and its episodes."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, port: int) -> None:
        self.server, self.thread = server, thread
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/mcp"
        self.episodes: Any = server.config.app.state.episodes

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(60)


@pytest.fixture()
def serve_mcp(answer_tasks: str, local_backend: Any) -> Iterator[Callable[..., ServedMCP]]:
    """Start ``taskgym mcp coding-terminal-v0 --transport http`` on the answer task
    (keywords: :func:`taskgym.mcp_server.http_app`'s)."""
    started: list[ServedMCP] = []

    def start(**options: Any) -> ServedMCP:
        app = http_app("coding-terminal-v0", tasks=answer_tasks, **options)
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port,
                                               log_level="warning", lifespan="on"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
            time.sleep(0.02)
        served = ServedMCP(server, thread, port)
        started.append(served)
        return served

    yield start
    for served in started:
        served.stop()
