"""A step served over OpenEnv's /ws on loopback (``taskgym serve`` in its own process, driven
by :class:`taskgym.remote.RemoteEnv`) beside the same step in process (``env.step``).

Both step ``coding-terminal-v0``'s ``echo hi`` (the shell's builtin) and ``/bin/echo hi`` (a
process started in the sandbox) on the local backend, in alternating rounds so
that the machine's load falls on both alike; the figure is the served median over the
in-process median. What the server adds: JSON both ways, a WebSocket frame each way through
the loopback, and the server's event loop (the env's ``astep``).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, load_note, ms, percentile  # noqa: E402

import taskgym  # noqa: E402
from taskgym.remote import RemoteEnv  # noqa: E402

COMMANDS = {"builtin": "echo hi", "process": "/bin/echo hi"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_healthy(url: str, deadline: float) -> None:
    while True:
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def timed_steps(env: Any, steps: int, command: str) -> list[float]:
    action = {"tool": "bash", "args": {"command": command}}
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        obs = env.step(action)[0]
        times.append(time.perf_counter() - start)
        assert obs["text"] == "hi\n[exit code 0]", obs
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=50, help="steps per round and side")
    args = parser.parse_args()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "taskgym", "serve", ENV_ID, "--port",
                               str(port), "--max-steps", "100000"],
                              env={**os.environ, "PYTHONUNBUFFERED": "1"},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    local = taskgym.make(ENV_ID, max_steps=100_000)
    remote = RemoteEnv(url)
    try:
        wait_healthy(url, time.monotonic() + 60)
        local.reset(seed=0)
        remote.reset(seed=0)
        print(f"{load_note()}; {args.rounds * args.steps} steps of each kind on each side")
        for kind, command in COMMANDS.items():
            served: list[float] = []
            in_process: list[float] = []
            timed_steps(local, 5, command)
            timed_steps(remote, 5, command)
            for _ in range(args.rounds):
                in_process += timed_steps(local, args.steps, command)
                served += timed_steps(remote, args.steps, command)
            report(f"{kind} ({command})", in_process, served)
    finally:
        remote.close()
        local.close()
        server.terminate()
        server.wait(timeout=60)


def report(title: str, in_process: list[float], served: list[float]) -> None:
    local_median, served_median = percentile(in_process, 50), percentile(served, 50)
    print(f"== {title}")
    print(f"  in process: median {ms(local_median):.2f} ms, p95 {ms(percentile(in_process, 95)):.2f} ms")
    print(f"  served /ws: median {ms(served_median):.2f} ms, p95 {ms(percentile(served, 95)):.2f} ms")
    print(f"  served / in process (medians): {served_median / local_median:.2f}x "
          f"(+{ms(served_median - local_median):.2f} ms)")


if __name__ == "__main__":
    main()
