"""W2: latency of ``env.reset`` for a cached task, beside the bare-bwrap-shell start floor.

``env.reset(options={"task_id": T})`` on a ready env closes the previous sandbox and starts
a new one seeded with the task's workspace. The floor is spawning an identical bwrap with a
bare bash until its first answer. Target: median reset <= 3x median floor start.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    ENV_ID,
    TASK_ID,
    Row,
    load_note,
    median,
    ms,
    percentile,
    print_rows,
    table,
)
from _floor import FloorShell, floor_start_latencies  # noqa: E402

import taskgym  # noqa: E402

TARGET_RATIO = 3.0


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def breakdown(env: Any, n: int) -> list[list[str]]:
    """The pieces of a reset, each timed alone (median ms)."""
    inner = env.unwrapped
    task = inner.task_set.get(TASK_ID)
    backend = inner.backend
    spec = inner.sandbox_spec(task)
    seed = inner.workspace_seed(task)
    files = sum(1 for p in seed.rglob("*") if p.is_file()) if seed else 0
    pieces: dict[str, list[float]] = {
        "task_set.get + sandbox_spec": [],
        "workspace_seed (prepared, cached)": [],
        f"backend.start(spec, seed) [{files} files copied in]": [],
        "backend.start(spec, None) [no copy]": [],
        "session.close()": [],
        "floor: FloorShell() + first answer": [],
        "floor: close": [],
    }
    for _ in range(n):
        pieces["task_set.get + sandbox_spec"].append(
            _timed(lambda: inner.sandbox_spec(inner.task_set.get(TASK_ID)))[0])
        pieces["workspace_seed (prepared, cached)"].append(
            _timed(lambda: inner.workspace_seed(task))[0])
        t, session = _timed(lambda: backend.start(spec, seed))
        pieces[f"backend.start(spec, seed) [{files} files copied in]"].append(t)
        pieces["session.close()"].append(_timed(session.close)[0])
        t, session = _timed(lambda: backend.start(spec, None))
        pieces["backend.start(spec, None) [no copy]"].append(t)
        session.close()

        def floor_start() -> FloorShell:
            sh = FloorShell()
            sh.ready()
            return sh

        t, sh = _timed(floor_start)
        pieces["floor: FloorShell() + first answer"].append(t)
        pieces["floor: close"].append(_timed(sh.close)[0])
    return [[name, f"{ms(median(v)):.2f}", f"{ms(percentile(v, 95)):.2f}"]
            for name, v in pieces.items()]


def profile_resets(env: Any, n: int, top: int = 20) -> str:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        env.reset(options={"task_id": TASK_ID})
    prof.disable()
    stats = pstats.Stats(prof, stream=io.StringIO())
    items = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]  # type: ignore[attr-defined]
    rows = []
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in items:
        where = f"{Path(filename).name}:{line} {name}" if line else name
        rows.append([where[:70], f"{ncalls / n:.1f}", f"{ms(tottime / n):.3f}",
                     f"{ms(cumtime / n):.3f}"])
    return table(["function", "calls/reset", "own ms/reset", "cum ms/reset"], rows)


def run(quick: bool = False, profile: bool = False) -> list[Row]:
    n = 15 if quick else 60
    rounds = 3 if quick else 6
    per = n // rounds
    print(f"reset latency: {n} resets of {TASK_ID!r} and {n} floor starts, "
          f"{rounds} interleaved rounds; {load_note()}")
    t_make, env = _timed(lambda: taskgym.make(ENV_ID))
    try:
        t_first, _ = _timed(lambda: env.reset(options={"task_id": TASK_ID}))
        print(f"taskgym.make: {ms(t_make):.1f} ms; first reset (prepares and caches the "
              f"workspace): {ms(t_first):.1f} ms")
        for _ in range(3):
            env.reset(options={"task_id": TASK_ID})
        resets: list[float] = []
        floors: list[float] = []
        for _ in range(rounds):
            for _ in range(per):
                resets.append(_timed(lambda: env.reset(options={"task_id": TASK_ID}))[0])
            floors += floor_start_latencies(per, warmup=1)
        rows = [[name, f"{ms(median(v)):.2f}", f"{ms(percentile(v, 95)):.2f}"]
                for name, v in (("env.reset(task_id)", resets), ("floor start", floors))]
        print(table(["what", "median ms", "p95 ms"], rows))
        print("\nwhere the time goes, pieces timed alone:")
        print(table(["piece", "median ms", "p95 ms"], breakdown(env, 6 if quick else 20)))
        ratio = median(resets) / median(floors)
        passed = ratio <= TARGET_RATIO
        if profile or not passed:
            print("\ncProfile of env.reset (per reset):")
            print(profile_resets(env, 10 if quick else 30))
        summary = [Row(
            "W2 reset, cached task (median / p95 ms)",
            f"{ms(median(resets)):.1f} / {ms(percentile(resets, 95)):.1f}",
            f"{ms(median(floors)):.1f} / {ms(percentile(floors, 95)):.1f}",
            f"{ratio:.2f}x",
            f"<= {TARGET_RATIO:g}x floor",
            passed,
        )]
        print_rows("reset latency", summary)
        return summary
    finally:
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--profile", action="store_true", help="always print a cProfile")
    args = parser.parse_args()
    run(args.quick, args.profile)


if __name__ == "__main__":
    main()
