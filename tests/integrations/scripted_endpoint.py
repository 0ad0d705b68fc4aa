"""A scripted OpenAI-compatible chat server on 127.0.0.1, for run_episode's tests and
benchmarks/run_episode_concurrency.py.

``POST /v1/chat/completions`` answers the request of model ``m`` with ``scripts[m][n]``,
where ``n`` counts the assistant messages the request already holds (so one script serves
any number of concurrent episodes); past the script's end it answers plain text. An entry
``{"status": 400}`` is answered with that status. Every request's body is kept in
``requests`` (unless ``keep=False``). ``think=(low, high)`` waits a uniform time in that
range before each reply, as a model's generation would.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: the trainers venv collects this folder without them
    from starlette.requests import Request
    from starlette.responses import JSONResponse


def bash(command: str, call_id: str | None = None) -> dict[str, Any]:
    return native("bash", {"command": command}, call_id)


def native(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    """An assistant message with one native tool call (``arguments`` an object, or text
    sent as it is)."""
    import json

    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": text}}
    if call_id is not None:
        call["id"] = call_id
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class ScriptedEndpoint:
    def __init__(self, scripts: Mapping[str, Sequence[dict[str, Any]]], keep: bool = True,
                 think: tuple[float, float] = (0.0, 0.0)) -> None:
        self.scripts = scripts
        self.keep = keep
        self.think = think
        self.requests: list[dict[str, Any]] = []
        from starlette.applications import Starlette
        from starlette.routing import Route

        self.app = Starlette(routes=[Route("/v1/chat/completions", self.complete,
                                           methods=["POST"])])

    async def complete(self, request: Request) -> JSONResponse:
        from starlette.responses import JSONResponse

        body = await request.json()
        if self.think[1] > 0:
            await asyncio.sleep(random.uniform(*self.think))
        if self.keep:
            self.requests.append(body)
        turn = sum(m.get("role") == "assistant" for m in body["messages"])
        script = self.scripts[body["model"]]
        entry = script[turn] if turn < len(script) else {"role": "assistant",
                                                         "content": "I am done."}
        if "status" in entry:
            return JSONResponse({"error": {"message": "scripted refusal"}},
                                status_code=entry["status"])
        return JSONResponse({"id": f"chatcmpl-{turn}", "object": "chat.completion",
                             "model": body["model"],
                             "choices": [{"index": 0, "message": entry,
                                          "finish_reason": "tool_calls"
                                          if entry.get("tool_calls") else "stop"}]})


@contextlib.contextmanager
def serving(endpoint: ScriptedEndpoint) -> Iterator[str]:
    """``endpoint`` served on a free loopback port in a thread; yields its ``/v1`` URL."""
    import uvicorn

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(endpoint.app, host="127.0.0.1", port=port,
                                           log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the scripted endpoint did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def main() -> None:
    """``python scripted_endpoint.py PORT SCRIPTS_JSON [THINK_LOW THINK_HIGH]``: serve in this
    process (what
    benchmarks/run_episode_concurrency.py starts, so the episodes' loop is alone in its
    own process)."""
    import json
    import sys

    import uvicorn

    port, scripts = int(sys.argv[1]), json.loads(sys.argv[2])
    think = (float(sys.argv[3]), float(sys.argv[4])) if len(sys.argv) > 4 else (0.0, 0.0)
    uvicorn.run(ScriptedEndpoint(scripts, keep=False, think=think).app, host="127.0.0.1", port=port,
                log_level="warning", lifespan="off")


if __name__ == "__main__":
    main()
