"""Snapshot and fork: the cost of one child at 1 MB and 500 MB of workspace, and fork(16)
against reset-and-replay of a 20-step prefix.

    python3 benchmarks/fork.py [--quick]

"fork of one child" is what ``env.fork(1)`` costs in the sandbox: ``session.snapshot()``
(the workspace copied to a host folder, the shell's state captured) plus
``backend.fork(snap)`` (a new sandbox started, the workspace copied in, the state sourced).
At 1 MB the env-level ``env.fork(1)`` (which also constructs the child env) is timed too.
Targets: <= 10 ms at 1 MB, <= 30 ms at 500 MB; fork(16) as a ratio to 16 resets that each
replay the 20 steps (the higher, the better).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, TASK_ID, Row, load_note, median, ms, percentile, print_rows, table  # noqa: E402

import taskgym  # noqa: E402
from taskgym import rollouts  # noqa: E402
from taskgym.sandbox import SandboxSpec, get_backend  # noqa: E402

TARGET_SMALL_MS = 10.0
TARGET_LARGE_MS = 30.0
PREFIX_STEPS = 20
CHILDREN = 16


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def session_fork(size_mb: int, n: int) -> dict[str, list[float]]:
    """Snapshot and fork timings of a bare session holding ``size_mb`` MB of files."""
    backend = get_backend("local")
    spec = SandboxSpec(disk_mb=max(512, size_mb * 2 + 64))
    times: dict[str, list[float]] = {"backend.start, empty (a child's floor)": [],
                                     "snapshot": [], "backend.fork": [], "one child": []}
    with backend.start(spec) as parent:
        # 64 files, so the tree walk counts too; random data, so nothing compresses
        each = max(1, size_mb * 1024 // 64)
        made = parent.exec(f"mkdir -p /app/d && for i in $(seq 64); do head -c {each}K "
                           "/dev/urandom > /app/d/f$i; done; export X=1; cd /app/d",
                           timeout=600)
        assert made.exit_code == 0, made
        for _ in range(n):
            t_start, bare = _timed(lambda: backend.start(spec))
            bare.close()
            times["backend.start, empty (a child's floor)"].append(t_start)
            t_snap, snap = _timed(parent.snapshot)
            t_fork, child = _timed(lambda: backend.fork(snap))  # noqa: B023
            child.close()
            snap.close()
            times["snapshot"].append(t_snap)
            times["backend.fork"].append(t_fork)
            times["one child"].append(t_snap + t_fork)
    return times


def env_fork_small(n: int) -> list[float]:
    env = taskgym.make(ENV_ID).unwrapped
    try:
        env.reset(options={"task_id": TASK_ID})
        env.step({"tool": "bash", "args": {"command": "head -c 1000000 /dev/urandom > /app/blob"}})
        found: list[float] = []
        for _ in range(n):
            t, (child,) = _timed(lambda: env.fork(1))
            found.append(t)
            child.close()
        return found
    finally:
        env.close()


def fork_against_replay(rounds: int) -> tuple[list[float], list[float], list[float]]:
    """Per round: env.fork(16) at the end of a 20-step prefix; 16 resets that each run the
    prefix; 16 resets that replay it from the cache (hits)."""
    prefix = [{"tool": "bash", "args": {"command": f"echo {i} >> /app/log"}}
              for i in range(PREFIX_STEPS)]
    env = taskgym.make(ENV_ID).unwrapped
    forks: list[float] = []
    replays: list[float] = []
    cached: list[float] = []
    try:
        def run_prefix() -> None:
            env.reset(options={"task_id": TASK_ID})
            for action in prefix:
                env.step(action)

        def cached_replays() -> None:
            for _ in range(CHILDREN):
                env.reset(options={"task_id": TASK_ID, "replay": prefix})

        run_prefix()
        for _ in range(rounds):
            run_prefix()
            t, children = _timed(lambda: env.fork(CHILDREN))
            forks.append(t)
            for child in children:
                child.close()
            replays.append(_timed(lambda: [run_prefix() for _ in range(CHILDREN)])[0])
            rollouts.clear_replay_cache()
            env.reset(options={"task_id": TASK_ID, "replay": prefix})  # fills the cache
            cached.append(_timed(cached_replays)[0])
    finally:
        env.close()
        rollouts.clear_replay_cache()
    return forks, replays, cached


def run(quick: bool = False) -> list[Row]:
    n_small = 5 if quick else 20
    n_large = 1 if quick else 3
    rounds = 1 if quick else 3
    print(f"fork: {n_small} forks at 1 MB, {n_large} at 500 MB, {rounds} round(s) of "
          f"fork({CHILDREN}) against replay of {PREFIX_STEPS} steps; {load_note()}")
    small = session_fork(1, n_small)
    large = session_fork(500, n_large)
    env_small = env_fork_small(n_small)
    forks, replays, cached = fork_against_replay(rounds)
    rows = [[f"{what} ({label})", f"{ms(median(v)):.1f}", f"{ms(percentile(v, 95)):.1f}"]
            for label, times in (("1 MB", small), ("500 MB", large))
            for what, v in times.items()]
    rows.append(["env.fork(1) (1 MB, child env built too)", f"{ms(median(env_small)):.1f}",
                 f"{ms(percentile(env_small, 95)):.1f}"])
    rows.append([f"env.fork({CHILDREN}) at step {PREFIX_STEPS}", f"{ms(median(forks)):.1f}",
                 f"{ms(percentile(forks, 95)):.1f}"])
    rows.append([f"{CHILDREN} x (reset + {PREFIX_STEPS} steps)", f"{ms(median(replays)):.1f}",
                 f"{ms(percentile(replays, 95)):.1f}"])
    rows.append([f"{CHILDREN} x reset(replay=prefix), cache hits", f"{ms(median(cached)):.1f}",
                 f"{ms(percentile(cached, 95)):.1f}"])
    print(table(["what", "median ms", "p95 ms"], rows))
    one_small = median(small["one child"])
    one_large = median(large["one child"])
    ratio = median(replays) / median(forks)
    summary = [
        Row("fork of one child, 1 MB workspace (median ms)", f"{ms(one_small):.1f}", "-",
            "-", f"<= {TARGET_SMALL_MS:g} ms", ms(one_small) <= TARGET_SMALL_MS),
        Row("fork of one child, 500 MB workspace (median ms)", f"{ms(one_large):.1f}", "-",
            "-", f"<= {TARGET_LARGE_MS:g} ms", ms(one_large) <= TARGET_LARGE_MS),
        Row(f"fork({CHILDREN}) vs {CHILDREN} resets replaying {PREFIX_STEPS} steps",
            f"{ms(median(forks)):.0f} ms", f"{ms(median(replays)):.0f} ms",
            f"{ratio:.2f}x faster", "> 1x (a ratio)", ratio > 1.0),
    ]
    print_rows("fork", summary)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    run(args.quick)


if __name__ == "__main__":
    main()
