"""256 concurrent ``taskgym.run_episode`` episodes on one event loop against a scripted
OpenAI-compatible endpoint (``tests/integrations/scripted_endpoint.py``, in its own process
on 127.0.0.1), local backend, ``coding-terminal-v0`` on the small ``calc`` fixture task.

Each episode's model replies ``bash echo hi`` ``--tool-steps`` times, then ``submit``
(graded: the task's pytest run in a fresh sandbox, so the null score 0.0 is expected); the
endpoint waits a think time before each reply (uniform ``--think`` seconds, default 0.5-1.5
as in W6: what a model's generation takes; ``--think 0 0`` for back-to-back steps, whose
latency is then the queue of every episode's step, Little's law).
Measured: a tool step's latency (``astep``, queueing on the loop included) p50/p95/max, the
submit step's (grading) p50/p95, a reply's round trip to the endpoint p95, event-loop lag
p99, episodes/s, and errors (an exception, or an episode that is not graded 0.0 with every
step run). One shared ``httpx.AsyncClient``, as a trainer would hold.

Target (issue 29): 256 concurrent episodes, zero errors; the tool step p95 reported (beside
W6's bar for bare ``astep`` under the same think time, 5 ms: benchmarks/async_episodes.py).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Row, load_note, ms, percentile, print_rows  # noqa: E402

import taskgym  # noqa: E402
from taskgym.core.env import TaskEnv  # noqa: E402

CALC = str(ROOT / "fixtures" / "coding" / "calc")
SERVER = ROOT / "tests" / "integrations" / "scripted_endpoint.py"
STEP_P95_MS = 5.0
TICK = 0.01


def script(tool_steps: int) -> list[dict[str, Any]]:
    def call(i: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "function",
             "function": {"name": name, "arguments": json.dumps(arguments)}}]}

    return ([call(i, "bash", {"command": "echo hi"}) for i in range(tool_steps)]
            + [call(tool_steps, "submit", {})])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_server(tool_steps: int, think: tuple[float, float]
                 ) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    server = subprocess.Popen([sys.executable, str(SERVER), str(port),
                               json.dumps({"bench": script(tool_steps)}),
                               str(think[0]), str(think[1])])
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/health", timeout=2)
        except urllib.error.HTTPError:  # 404: the server is up
            return server, f"{url}/v1"
        except OSError:
            if time.monotonic() > deadline or server.poll() is not None:
                server.kill()
                raise RuntimeError("the scripted endpoint did not start") from None
            time.sleep(0.1)


class Timings:
    def __init__(self) -> None:
        self.tool_steps: list[float] = []
        self.submits: list[float] = []
        self.replies: list[float] = []
        self.lags: list[float] = []
        self.errors: list[str] = []


def time_steps(timings: Timings) -> None:
    """Time every ``astep`` of this process (the benchmark's own instrument)."""
    astep = TaskEnv.astep

    async def timed(self: TaskEnv, action: Any) -> Any:
        start = time.perf_counter()
        result = await astep(self, action)
        name = action.get("function", {}).get("name") if isinstance(action, dict) else None
        (timings.submits if name == "submit" else timings.tool_steps).append(
            time.perf_counter() - start)
        return result

    TaskEnv.astep = timed  # type: ignore[method-assign]


async def ticker(timings: Timings, running: asyncio.Event) -> None:
    while running.is_set():
        start = time.perf_counter()
        await asyncio.sleep(TICK)
        timings.lags.append(time.perf_counter() - start - TICK)


async def run(episodes: int, tool_steps: int, url: str, timings: Timings) -> float:
    import httpx

    class TimedClient(httpx.AsyncClient):
        async def send(self, request: httpx.Request, **kwargs: Any) -> httpx.Response:
            start = time.perf_counter()
            response = await super().send(request, **kwargs)
            timings.replies.append(time.perf_counter() - start)
            return response

    limits = httpx.Limits(max_connections=episodes, max_keepalive_connections=episodes)
    async with TimedClient(timeout=600, limits=limits) as client:
        async def one(i: int) -> None:
            try:
                result = await taskgym.run_episode(
                    "coding-terminal-v0", base_url=url, model="bench", task="calc",
                    http_client=client, make_kwargs={"tasks": CALC})
            except Exception as exc:
                timings.errors.append(f"episode {i}: {type(exc).__name__}: {exc}")
                return
            if (result.verdict, result.reward, result.steps, result.ended) != (
                    "graded", 0.0, tool_steps + 1, "submitted"):
                timings.errors.append(f"episode {i}: {result.verdict} {result.reward} "
                                      f"{result.steps} {result.ended} {result.failure}")

        running = asyncio.Event()
        running.set()
        tick = asyncio.create_task(ticker(timings, running))
        start = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(episodes)))
        wall = time.perf_counter() - start
        running.clear()
        await tick
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--episodes", type=int, default=256)
    parser.add_argument("--tool-steps", type=int, default=4)
    parser.add_argument("--think", type=float, nargs=2, default=(0.5, 1.5),
                        metavar=("LOW", "HIGH"))
    args = parser.parse_args()
    print(f"run_episode concurrency: {args.episodes} episodes x ({args.tool_steps} tool steps "
          f"+ submit) on one loop, think {args.think[0]}-{args.think[1]} s; {load_note()}")
    timings = Timings()
    time_steps(timings)
    server, url = start_server(args.tool_steps, tuple(args.think))
    try:
        wall = asyncio.run(run(args.episodes, args.tool_steps, url, timings))
    finally:
        server.terminate()
        server.wait(timeout=10)
    for error in timings.errors[:10]:
        print("error:", error)
    step_p95 = ms(percentile(timings.tool_steps, 95))
    print_rows("run_episode concurrency", [
        Row("episodes / errors", f"{args.episodes} / {len(timings.errors)}", "", "",
            "0 errors", not timings.errors),
        Row("tool step p50 / p95 / max ms",
            f"{ms(percentile(timings.tool_steps, 50)):.2f} / {step_p95:.2f} / "
            f"{ms(max(timings.tool_steps, default=float('nan'))):.1f}", "", "",
            f"reported (W6: < {STEP_P95_MS})", True),
        Row("submit (grading) step p50 / p95 s",
            f"{percentile(timings.submits, 50):.2f} / {percentile(timings.submits, 95):.2f}",
            "", "", "", True),
        Row("endpoint reply round trip p95 ms", f"{ms(percentile(timings.replies, 95)):.1f}",
            "", "", "", True),
        Row("event-loop lag p99 ms", f"{ms(percentile(timings.lags, 99)):.1f}", "", "", "",
            True),
        Row("wall s / episodes per s", f"{wall:.1f} / {args.episodes / wall:.1f}", "", "", "",
            True),
    ])
    print(f"(cpu count {os.cpu_count()}; the endpoint in its own process)")


if __name__ == "__main__":
    main()
