"""Many concurrent remote episodes from one client process against ``taskgym serve`` on loopback.

    python3 benchmarks/serve_concurrency.py [--episodes 1000] [--steps 3]

Starts ``taskgym serve coding-terminal-v0`` on 127.0.0.1 with its limits raised to the episode
count (``--max-sessions``, ``--max-sessions-per-client``; ``--start-wait`` long enough for every
reset to get a start slot; ``--max-starting`` stays at its default of 2, the machine's CPUs),
then runs every episode at once on one asyncio loop in this process: each opens its own
WebSocket (:class:`taskgym.remote.RemoteEnv`'s asyncio API), resets (a sandbox starts on the
server), waits until every episode has reset (so that all the sandboxes live at once and the
steps run concurrently; ``--no-together`` skips the wait), steps ``echo hi`` in its shell
``--steps`` times, and closes. Prints the dropped
connections and other errors (the target: none), the reset and per-step latencies (median,
p95, max), the wall time, and the server's peak open descriptors, sandboxes and memory.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, load_note, ms, percentile  # noqa: E402
from serve_latency import free_port, wait_healthy  # noqa: E402

from taskgym.remote import RemoteEnv  # noqa: E402

STEP = {"tool": "bash", "args": {"command": "echo hi"}}


class Peaks:
    """The server's peak open descriptors, live sandboxes (child processes) and memory, sampled
    from /proc in a thread while the episodes run."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.fds = self.children = 0
        self.rss_mb = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self.fds = max(self.fds, len(os.listdir(f"/proc/{self.pid}/fd")))
                tree = _descendants(self.pid)
                self.children = max(self.children, len(tree))
                rss = sum(_rss_kb(pid) for pid in [self.pid, *tree])
                self.rss_mb = max(self.rss_mb, rss / 1024)
            except OSError:
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (the sandboxes' bwrap, their shells, ...)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        try:
            children = [int(c) for c in Path(f"/proc/{todo.pop()}/task").glob("*/children")
                        for c in c.read_text().split()]
        except OSError:
            continue
        found += children
        todo += children
    return found


def _rss_kb(pid: int) -> int:
    """Resident memory of ``pid`` in KiB (0 once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Barrier:
    """Every episode waits here after its reset until all have reset or failed."""

    def __init__(self, parties: int) -> None:
        self.left = parties
        self.event = asyncio.Event()

    def arrive(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.event.set()


async def episode(url: str, steps: int, resets: list[float], times: list[float],
                  errors: list[str], barrier: Barrier | None) -> None:
    env = RemoteEnv(url, timeout=900)
    arrived = False
    try:
        start = time.perf_counter()
        try:
            await env.areset()
        finally:
            if barrier is not None:
                barrier.arrive()
                arrived = True
        resets.append(time.perf_counter() - start)
        if barrier is not None:
            await barrier.event.wait()
        for _ in range(steps):
            start = time.perf_counter()
            obs = (await env.astep(STEP))[0]
            times.append(time.perf_counter() - start)
            if obs["text"] != "hi\n[exit code 0]":
                errors.append(f"unexpected observation {obs['text'][:200]!r}")
    except Exception as exc:  # a dropped connection, a refusal: counted, never hidden
        errors.append(f"{type(exc).__name__}: {str(exc)[:300]}")
        if barrier is not None and not arrived:
            barrier.arrive()
    finally:
        try:
            await env.aclose()
        except Exception as exc:
            errors.append(f"close: {type(exc).__name__}: {str(exc)[:300]}")


async def run_all(url: str, episodes: int, steps: int,
                  together: bool) -> tuple[list[float], list[float], list[str], float]:
    """Resets' and steps' seconds, the errors, and (together) the seconds from the last reset
    to the last episode's end: the steps' phase."""
    resets: list[float] = []
    times: list[float] = []
    errors: list[str] = []
    barrier = Barrier(episodes) if together else None
    started = time.perf_counter()
    await asyncio.gather(*(episode(url, steps, resets, times, errors, barrier)
                           for _ in range(episodes)))
    ended = time.perf_counter()
    return resets, times, errors, ended - (started + max(resets, default=0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=3, help="echo steps per episode")
    parser.add_argument("--no-together", dest="together", action="store_false",
                        help="step as soon as reset (fewer sandboxes alive at once)")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)  # a socket per episode here too
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * args.episodes + 256)), hard))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    limits = ["--max-sessions", str(args.episodes), "--max-sessions-per-client",
              str(args.episodes), "--start-wait", "900", "--idle-timeout", "900"]
    log = tempfile.TemporaryFile(mode="w+")  # a pipe nobody reads would fill and stall the server
    server = subprocess.Popen([sys.executable, "-m", "taskgym", "serve", ENV_ID, "--port",
                               str(port), *limits], env={**os.environ, "PYTHONUNBUFFERED": "1"},
                              stdout=subprocess.DEVNULL, stderr=log, text=True)
    try:
        wait_healthy(url, time.monotonic() + 120)
        print(f"{load_note()}; {args.episodes} episodes of a reset and {args.steps} steps, "
              f"one client process; server limits: {' '.join(limits)}")
        peaks = Peaks(server.pid)
        started = time.perf_counter()
        resets, times, errors, stepping = asyncio.run(
            run_all(url, args.episodes, args.steps, args.together))
        wall = time.perf_counter() - started
        peaks.stop()
        report(args.episodes, resets, times, errors, wall, peaks)
        if args.together and times:
            print(f"  every episode's steps at once: {len(times)} steps (and the closes) in "
                  f"{stepping:.1f} s, {len(times) / stepping:.0f} steps/s")
    finally:
        server.terminate()
        server.wait(timeout=300)
        log.seek(0)
        tail = [line for line in log if "Traceback" in line or "ERROR" in line]
        log.close()
        if tail:
            print(f"server log: {len(tail)} error lines, e.g. {tail[0][:300]}")


def report(episodes: int, resets: list[float], times: list[float], errors: list[str], wall: float,
           peaks: Peaks) -> None:
    print(f"  episodes finished without error: {episodes - len(errors)}/{episodes}; errors "
          f"(dropped connections included): {len(errors)}")
    for error in sorted(set(errors))[:5]:
        print(f"    {errors.count(error)} x {error}")
    if resets:
        print(f"  reset (queued for a start slot): median {ms(percentile(resets, 50)):.0f} ms, "
              f"p95 {ms(percentile(resets, 95)):.0f} ms, max {ms(max(resets)):.0f} ms")
    if times:
        print(f"  step ({len(times)}): median {ms(percentile(times, 50)):.2f} ms, p95 "
              f"{ms(percentile(times, 95)):.2f} ms, max {ms(max(times)):.2f} ms")
    print(f"  wall {wall:.1f} s; server peaks: {peaks.fds} open descriptors, {peaks.children} "
          f"processes below it, {peaks.rss_mb:.0f} MB resident (server and sandboxes, shared pages "
          "counted per process)")


if __name__ == "__main__":
    main()
