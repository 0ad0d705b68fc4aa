"""W4: total steps/s with many envs stepping ``echo hi`` in parallel from threads.

One thread per env; each does ``steps`` steps after its reset (resets are not timed). The
floor is the same number of bare bash shells in identical bwrap sandboxes, one thread per
shell. Target: taskgym's steps/s at least a third of the floor's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, TASK_ID, Row, load_note, print_rows, table  # noqa: E402
from _floor import floor_parallel_steps, python_cpu, sandbox_cpu, sandbox_pids  # noqa: E402

import taskgym  # noqa: E402

TARGET_FRACTION = 1.0 / 3.0
ACTION: dict[str, Any] = {"tool": "bash", "args": {"command": "echo hi"}}


def env_parallel_steps(
    envs: list[Any], steps: int, stats: dict[str, float] | None = None
) -> float:
    """Total steps/s with one thread per (already reset) env, ``steps`` steps each.

    When given, ``stats`` receives ``python_cpu_us`` and ``sandbox_cpu_us`` per step.
    """
    barrier = threading.Barrier(len(envs) + 1)
    errors: list[str] = []

    def work(env: Any) -> None:
        barrier.wait()
        for _ in range(steps):
            obs, _r, terminated, truncated, info = env.step(ACTION)
            if terminated or truncated or "error" in info:
                errors.append(f"{obs['text']!r} {info.get('error')}")
                return

    threads = [threading.Thread(target=work, args=(e,)) for e in envs]
    pids = []
    for env in envs:
        launched = env.unwrapped.session._proc
        pids += [launched.proc.pid, *sandbox_pids(launched.pidns)]
    for t in threads:
        t.start()
    sb0 = sandbox_cpu(pids)
    barrier.wait()
    t0, py0 = time.perf_counter(), python_cpu()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    total = len(envs) * steps
    if stats is not None:
        stats["python_cpu_us"] = (python_cpu() - py0) / total * 1e6
        stats["sandbox_cpu_us"] = (sandbox_cpu(pids) - sb0) / total * 1e6
    if errors:
        raise RuntimeError(f"a step failed: {errors[0]}")
    return total / elapsed


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
