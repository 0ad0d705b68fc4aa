"""A step through ``taskgym mcp`` (the mcp SDK's own client) beside the same step in process.

``coding-terminal-v0``'s ``echo hi`` (the shell's builtin), on the local backend: in process
(``env.step``), through ``mcp.Client`` on the episode-handle server in process (the SDK's
in-memory transport), and over streamable HTTP on loopback to ``taskgym mcp --transport
http`` in its own process, in the 2026-07-28 mode (``"auto"``, no MCP session) and the legacy
mode (an MCP session). Alternating rounds, so that the machine's load falls on all alike.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mcp  # noqa: E402
from _common import ENV_ID, load_note, ms, percentile  # noqa: E402
from serve_latency import free_port, timed_steps, wait_healthy  # noqa: E402

import taskgym  # noqa: E402
from taskgym.mcp_server import EpisodeHandles  # noqa: E402

COMMAND = {"command": "echo hi"}


async def mcp_steps(client: mcp.Client, episode_id: str, steps: int) -> list[float]:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        result = await client.call_tool("bash", {"episode_id": episode_id, **COMMAND})
        times.append(time.perf_counter() - start)
        assert not result.is_error, result
    return times


async def measure(url: str, rounds: int, steps: int) -> dict[str, list[float]]:
    env = taskgym.make(ENV_ID, max_steps=100_000)
    env.reset(seed=0)
    handles = EpisodeHandles(ENV_ID, max_steps=100_000)
    times: dict[str, list[float]] = {"in process": [], "mcp, in process": [],
                                     "mcp http 2026-07-28": [], "mcp http legacy": []}
    try:
        async with mcp.Client(handles.server) as local, mcp.Client(url) as modern, \
                mcp.Client(url, mode="legacy") as legacy:
            clients = {"mcp, in process": local, "mcp http 2026-07-28": modern,
                       "mcp http legacy": legacy}
            episodes = {name: (await client.call_tool("start_episode", {"seed": 0}))
                        .structured_content["episode_id"] for name, client in clients.items()}
            for _ in range(rounds):
                times["in process"] += timed_steps(env, steps, COMMAND["command"])
                for name, client in clients.items():
                    times[name] += await mcp_steps(client, episodes[name], steps)
    finally:
        env.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=50, help="steps per round and side")
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "taskgym", "mcp", ENV_ID, "--transport",
                               "http", "--port", str(port), "--max-steps", "100000"],
                              env={**os.environ, "PYTHONUNBUFFERED": "1"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_healthy(f"http://127.0.0.1:{port}", time.monotonic() + 60)
        print(f"{load_note()}; {args.rounds * args.steps} steps of `echo hi` on each side")
        times = asyncio.run(measure(f"http://127.0.0.1:{port}/mcp", args.rounds, args.steps))
    finally:
        server.terminate()
        server.wait(timeout=60)
    base = percentile(times["in process"], 50)
    for name, values in times.items():
        median = percentile(values, 50)
        print(f"  {name:<20} median {ms(median):.2f} ms, p95 {ms(percentile(values, 95)):.2f} ms"
              f" ({median / base:.1f}x in process, +{ms(median - base):.2f} ms)")


if __name__ == "__main__":
    main()
