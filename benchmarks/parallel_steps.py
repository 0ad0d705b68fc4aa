"""W4: total steps/s with many envs stepping ``echo hi`` in parallel from threads.

One thread per env; each does ``steps`` steps after its reset (resets are not timed). The
floor is the same number of bare bash shells in identical bwrap sandboxes, one thread per
shell. Target: taskgym's steps/s at least a third of the floor's.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, TASK_ID, Row, load_note, print_rows, table  # noqa: E402
from _floor import floor_parallel_steps, sandbox_pids, timed_in_threads  # noqa: E402

import taskgym  # noqa: E402

TARGET_FRACTION = 1.0 / 3.0
ACTION: dict[str, Any] = {"tool": "bash", "args": {"command": "echo hi"}}


def env_parallel_steps(
    envs: list[Any], steps: int, stats: dict[str, float] | None = None
) -> float:
    """Total steps/s with one thread per (already reset) env, ``steps`` steps each.

    When given, ``stats`` receives ``python_cpu_us`` and ``sandbox_cpu_us`` per step.
    """
    errors: list[str] = []

    def work(env: Any) -> None:
        for _ in range(steps):
            obs, _r, terminated, truncated, info = env.step(ACTION)
            if terminated or truncated or "error" in info:
                errors.append(f"{obs['text']!r} {info.get('error')}")
                return

    pids = []
    for env in envs:
        launched = env.unwrapped.session._proc
        pids += [launched.proc.pid, *sandbox_pids(launched.pidns)]
    rate = timed_in_threads([functools.partial(work, e) for e in envs], pids,
                            len(envs) * steps, stats)
    if errors:
        raise RuntimeError(f"a step failed: {errors[0]}")
    return rate


def run(quick: bool = False) -> list[Row]:
    steps = 50 if quick else 200
    rounds = 1 if quick else 3
    sizes = (16, 64)
    print(f"parallel steps: {steps} steps per env/shell, one thread each, median of {rounds} "
          f"round(s); {load_note()}")
    summary = []
    table_rows = []
    for n in sizes:
        t0 = time.perf_counter()
        envs = [taskgym.make(ENV_ID, max_steps=10**9) for _ in range(n)]
        try:
            for env in envs:
                env.reset(options={"task_id": TASK_ID})
                env.step(ACTION)
            setup = time.perf_counter() - t0
            ours: list[float] = []
            floors: list[float] = []
            our_cpu: list[dict[str, float]] = []
            floor_cpu: list[dict[str, float]] = []
            for _ in range(rounds):
                our_cpu.append({})
                floor_cpu.append({})
                ours.append(env_parallel_steps(envs, steps, our_cpu[-1]))
                floors.append(floor_parallel_steps(n, steps, n, floor_cpu[-1]))
        finally:
            for env in envs:
                env.close()
        mine, floor = statistics.median(ours), statistics.median(floors)
        ratio = mine / floor
        def cpu(runs: list[dict[str, float]]) -> str:
            py = statistics.median(r["python_cpu_us"] for r in runs)
            sb = statistics.median(r["sandbox_cpu_us"] for r in runs)
            return f"{py:.0f} + {sb:.0f}"

        table_rows.append([str(n), f"{mine:,.0f}", f"{floor:,.0f}", f"{ratio:.2f}",
                           cpu(our_cpu), cpu(floor_cpu),
                           " ".join(f"{v:,.0f}" for v in ours),
                           " ".join(f"{v:,.0f}" for v in floors), f"{setup:.1f}"])
        summary.append(Row(
            f"W4 {n} envs x {steps} steps in parallel (steps/s)",
            f"{mine:,.0f}", f"{floor:,.0f}", f"{ratio:.2f}x",
            ">= 0.33x floor", ratio >= TARGET_FRACTION,
        ))
    print(table(["envs", "taskgym steps/s", "floor steps/s", "ratio",
                 "taskgym CPU us/step", "floor CPU us/step", "taskgym rounds", "floor rounds",
                 "make+reset s"], table_rows))
    print("(CPU us/step = host Python process + sandbox processes, during the timed run; "
          f"{os.cpu_count()} CPUs bound steps/s to about CPUs / total)")
    print_rows("parallel steps", summary)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps, one round")
    args = parser.parse_args()
    run(args.quick)


if __name__ == "__main__":
    main()
