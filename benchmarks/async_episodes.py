"""W6: many concurrent async episodes on one event loop (``areset`` / ``astep``), local backend.

Two loads, each with ``coding-terminal-v0`` envs stepping ``echo hi``:

- **live episodes** (N = 256, 512, 1000): every episode steps, then waits a think time
  (uniform 0.5-1.5 s, what a model's reply takes) before its next step, as in an RL
  rollout; N episodes offer about N steps/s. Measured: step latency p95 (the time
  ``astep`` takes, queueing on the loop included), event-loop lag p99 (a ticker coroutine
  sleeping 10 ms measures its oversleep), errors, and memory per live episode (the growth
  of this process's RSS from making and resetting the N envs, plus the Pss of their
  sandbox processes, divided by N). The same load then runs through
  ``asyncio.to_thread(env.step, ...)`` on the sync API (the default executor) for comparison.
  A step's latency cannot be below what the offered load queues: with no think time, N
  steps in flight on 2 cores take N / (steps/s) each (Little's law), which is why this load
  has one.
- **throughput** (64 episodes, no think time): aggregate steps/s of 64 episodes stepping
  back to back on one loop, beside the floor in the same run (64 bare bash shells in
  identical bwrap sandboxes, one thread each, as in W4), and beside the same envs stepped
  through the sync API from one thread each (W4's taskgym figure). It runs on asyncio's
  own loop and on uvloop's (when installed: ``pip install 'taskgym[fast]'``), round by round.

Targets (issue 15): 1,000 episodes: step p95 < 5 ms, loop lag p99 < 50 ms, zero errors;
64-episode throughput >= 0.7x the floor.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, TASK_ID, Row, load_note, ms, percentile, print_rows, table  # noqa: E402
from _floor import floor_parallel_steps, process_memory  # noqa: E402
from parallel_steps import env_parallel_steps  # noqa: E402

import taskgym  # noqa: E402
from taskgym.core.env import TaskEnv  # noqa: E402

ACTION: dict[str, Any] = {"tool": "bash", "args": {"command": "echo hi"}}
EXPECTED = "hi\n[exit code 0]"
STEP_P95_MS = 5.0
LAG_P99_MS = 50.0
THROUGHPUT_FRACTION = 0.7
TICK = 0.01


def _loops() -> dict[str, Callable[[Coroutine[Any, Any, Any]], Any]]:
    """The event loops to run on: asyncio's, and uvloop's when it is installed."""
    loops: dict[str, Callable[[Coroutine[Any, Any, Any]], Any]] = {"asyncio": asyncio.run}
    try:
        import uvloop
    except ImportError:
        print("uvloop is not installed (pip install 'taskgym[fast]'): asyncio's loop only")
    else:
        loops["uvloop"] = uvloop.run
    return loops


class Load:
    """What one run of the live-episodes load measured."""

    def __init__(self) -> None:
        self.steps: list[float] = []
        self.lags: list[float] = []
        self.errors: list[str] = []


async def _ticker(load: Load, running: asyncio.Event) -> None:
    clock = time.perf_counter
    while not running.is_set():
        t0 = clock()
        await asyncio.sleep(TICK)
        load.lags.append(clock() - t0 - TICK)


def _check(load: Load, obs: dict[str, str], terminated: bool, truncated: bool,
           info: dict[str, Any]) -> None:
    if obs["text"] != EXPECTED or terminated or truncated or "error" in info:
        load.errors.append(f"{obs['text'][:200]!r} {info.get('error')}")


async def _live_async(env: TaskEnv, load: Load, seconds: float, rng: random.Random) -> None:
    clock = time.perf_counter
    end = clock() + seconds
    await asyncio.sleep(rng.uniform(0.0, 1.0))  # spread the first steps out
    while clock() < end:
        t0 = clock()
        try:
            obs, _r, terminated, truncated, info = await env.astep(ACTION)
        except Exception as exc:  # astep must not raise: count it
            load.errors.append(f"{type(exc).__name__}: {exc}")
            return
        load.steps.append(clock() - t0)
        _check(load, obs, terminated, truncated, info)
        await asyncio.sleep(rng.uniform(0.5, 1.5))


async def _live_threads(env: TaskEnv, load: Load, seconds: float, rng: random.Random) -> None:
    clock = time.perf_counter
    end = clock() + seconds
    await asyncio.sleep(rng.uniform(0.0, 1.0))
    while clock() < end:
        t0 = clock()
        try:
            obs, _r, terminated, truncated, info = await asyncio.to_thread(env.step, ACTION)
        except Exception as exc:
            load.errors.append(f"{type(exc).__name__}: {exc}")
            return
        load.steps.append(clock() - t0)
        _check(load, obs, terminated, truncated, info)
        await asyncio.sleep(rng.uniform(0.5, 1.5))


async def _run_load(envs: list[TaskEnv], seconds: float, threaded: bool) -> Load:
    load = Load()
    done = asyncio.Event()
    ticker = asyncio.create_task(_ticker(load, done))
    episode = _live_threads if threaded else _live_async
    await asyncio.gather(*(episode(env, load, seconds, random.Random(i))
                           for i, env in enumerate(envs)))
    done.set()
    await ticker
    return load


def _sandbox_pids(envs: list[TaskEnv]) -> list[int]:
    """The outer bwrap and every process of each env's sandbox, in one pass over /proc."""
    wanted: dict[str, list[int]] = {}
    outer = []
    for env in envs:
        launched = env.session._proc  # type: ignore[attr-defined]
        outer.append(launched.proc.pid)
        wanted[f"pid:[{launched.pidns}]"] = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                ns = os.readlink(f"/proc/{entry.name}/ns/pid")
                if ns in wanted:
                    wanted[ns].append(int(entry.name))
    return outer + [pid for pids in wanted.values() for pid in pids]


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024.0
    return 0.0


async def _start(n: int) -> list[TaskEnv]:
    envs = [taskgym.make(ENV_ID, max_steps=10**9).unwrapped for _ in range(n)]
    await asyncio.gather(*(env.areset(options={"task_id": TASK_ID}) for env in envs))
    return envs  # type: ignore[return-value]


def live_episodes(n: int, seconds: float, loop: str = "asyncio") -> dict[str, Any]:
    """The live-episodes load with ``n`` envs, async then threaded; its figures."""
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    envs = asyncio.run(_start(n))
    start_sec = time.perf_counter() - t0
    try:
        host_mb = (_rss_mb() - rss0) / n
        sandbox = process_memory(_sandbox_pids(envs))
        run_on = _loops()[loop]
        ours = run_on(_run_load(envs, seconds, threaded=False))
        threads = run_on(_run_load(envs, seconds, threaded=True))
    finally:
        async def close() -> None:
            await asyncio.gather(*(env.aclose() for env in envs))
        asyncio.run(close())
    return {"n": n, "start_sec": start_sec, "host_mb": host_mb,
            "pss_mb": sandbox["pss_mb"] / n, "rss_mb": sandbox["rss_mb"] / n,
            "async": ours, "threads": threads}


async def _throughput(envs: list[TaskEnv], steps: int) -> tuple[float, list[str]]:
    errors: list[str] = []

    async def work(env: TaskEnv) -> None:
        for _ in range(steps):
            obs, _r, terminated, truncated, info = await env.astep(ACTION)
            if obs["text"] != EXPECTED or terminated or truncated:
                errors.append(f"{obs['text'][:200]!r} {info.get('error')}")
                return

    t0 = time.perf_counter()
    await asyncio.gather(*(work(env) for env in envs))
    return len(envs) * steps / (time.perf_counter() - t0), errors


def throughput(n: int, steps: int, rounds: int
               ) -> tuple[dict[str, list[float]], list[float], list[float], list[str]]:
    """Steps/s of ``n`` async episodes back to back on each loop, of the same envs stepped
    from one thread each (W4's sync path), and of the floor, interleaved round by round."""
    loops = _loops()
    envs = asyncio.run(_start(n))
    ours: dict[str, list[float]] = {name: [] for name in loops}
    threaded: list[float] = []
    floors: list[float] = []
    errors: list[str] = []
    try:
        for _ in range(rounds):
            for name, run_on in loops.items():
                rate, errs = run_on(_throughput(envs, steps))
                ours[name].append(rate)
                errors += errs
            threaded.append(env_parallel_steps(envs, steps))
            floors.append(floor_parallel_steps(n, steps, n))
    finally:
        for env in envs:
            env.close()
    return ours, threaded, floors, errors


def _load_cells(load: Load) -> list[str]:
    return [f"{ms(percentile(load.steps, 50)):.2f}", f"{ms(percentile(load.steps, 95)):.2f}",
            f"{ms(percentile(load.lags, 99)):.1f}", f"{ms(max(load.lags, default=0.0)):.1f}",
            f"{len(load.steps):,}", str(len(load.errors))]


def run(quick: bool = False, sizes: tuple[int, ...] = (256, 512, 1000), loop: str = "asyncio"
        ) -> list[Row]:
    seconds = 5.0 if quick else 20.0
    steps, rounds = (100, 1) if quick else (300, 3)
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    print(f"async episodes: live load {seconds:.0f} s per run on {loop}, think time 0.5-1.5 s; "
          f"throughput {steps} steps x 64 episodes, median of {rounds}; RLIMIT_NOFILE {soft}; "
          f"{load_note()}")
    summary: list[Row] = []
    rows = []
    for n in sizes:
        if n <= 0:
            continue
        found = live_episodes(n, seconds, loop)
        ours, threads = found["async"], found["threads"]
        memory = f"{found['host_mb'] + found['pss_mb']:.1f}"
        rows.append([str(n), "astep", *_load_cells(ours), f"{found['host_mb']:.2f}",
                     f"{found['pss_mb']:.2f}", memory, f"{found['start_sec']:.1f}"])
        rows.append([str(n), "to_thread(step)", *_load_cells(threads), "", "", "", ""])
        if ours.errors:
            print(f"  first error with {n}: {ours.errors[0]}")
        if threads.errors:
            print(f"  first to_thread error with {n}: {threads.errors[0]}")
        p95, lag = ms(percentile(ours.steps, 95)), ms(percentile(ours.lags, 99))
        t95, tlag = ms(percentile(threads.steps, 95)), ms(percentile(threads.lags, 99))
        summary.append(Row(f"W6 {n} async episodes: step p95 (ms)", f"{p95:.2f}",
                           f"to_thread {t95:.2f}", f"{p95 / t95:.2f}x", f"< {STEP_P95_MS:g} ms",
                           p95 < STEP_P95_MS))
        summary.append(Row(f"W6 {n} async episodes: loop lag p99 (ms)", f"{lag:.1f}",
                           f"to_thread {tlag:.1f}", f"{lag - tlag:+.1f} ms",
                           f"< {LAG_P99_MS:g} ms", lag < LAG_P99_MS))
        summary.append(Row(f"W6 {n} async episodes: errors", str(len(ours.errors)),
                           f"to_thread {len(threads.errors)}", "", "0", not ours.errors))
    print(table(["episodes", "path", "step p50 ms", "step p95 ms", "lag p99 ms", "lag max ms",
                 "steps", "errors", "host MB/ep", "sandbox Pss MB/ep", "MB per episode",
                 "areset all s"], rows))
    ours_rates, thread_rates, floor_rates, errors = throughput(64, steps, rounds)
    floor = statistics.median(floor_rates)
    print(table(["64 episodes", "steps/s (rounds)"],
                [*([f"astep on one {name} loop", " ".join(f"{v:,.0f}" for v in rates)]
                   for name, rates in ours_rates.items()),
                 ["step from 64 threads (W4)", " ".join(f"{v:,.0f}" for v in thread_rates)],
                 ["floor, 64 threads", " ".join(f"{v:,.0f}" for v in floor_rates)]]))
    if errors:
        print(f"  first throughput error: {errors[0]}")
    for name, rates in ours_rates.items():
        mine = statistics.median(rates)
        summary.append(Row(f"W6 64 async episodes back to back, {name} loop (steps/s)",
                           f"{mine:,.0f}", f"{floor:,.0f}", f"{mine / floor:.2f}x",
                           f">= {THROUGHPUT_FRACTION:g}x floor",
                           mine / floor >= THROUGHPUT_FRACTION and not errors))
    print_rows("async episodes", summary)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, one round")
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1000],
                        help="episode counts of the live load (default: 256 512 1000; 0: none)")
    parser.add_argument("--loop", choices=("asyncio", "uvloop"), default="asyncio",
                        help="the event loop of the live load (the throughput runs on both)")
    args = parser.parse_args()
    run(args.quick, tuple(args.sizes), args.loop)


if __name__ == "__main__":
    main()
