"""Vector envs: steps/s of taskgym's vector env against W4's threads and AsyncVectorEnv.

16 envs stepping ``echo hi``, three ways, interleaved round by round in one run (resets are
not timed):

- W4: one thread per env, each doing its ``steps`` steps on its own (no lockstep);
- taskgym's vector env (``taskgym.make_vec``) with ``stepping="threads"``: ``steps`` calls of
  ``step`` with 16 actions, its threads stepping the 16 envs at once, every call waiting for
  the slowest;
- the same with ``stepping="loop"`` (the default for local sandboxes): the calling thread
  steps the 16 envs itself, each sub-step a plan, all waited on in one ``poll``
  (:func:`taskgym.sandbox.shell.plans.drive_plans`);
- ``gymnasium.vector.AsyncVectorEnv`` with ``shared_memory=True``: one process per env.

Target: the vector env's steps/s at least 0.8x W4's (each way of stepping is checked).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gymnasium as gym  # noqa: E402
from _common import (  # noqa: E402
    ENV_ID,
    TASK_ID,
    Row,
    load_note,
    ms,
    percentile,
    print_rows,
    table,
)
from _floor import python_cpu  # noqa: E402
from parallel_steps import ACTION, env_parallel_steps  # noqa: E402

import taskgym  # noqa: E402

TARGET_FRACTION = 0.8
LABELS = {"threads": "W4 threads", "native": "vector env, threads", "loop": "vector env, loop",
          "async": "AsyncVectorEnv"}
ENVS = 16


def vector_steps(venv: gym.vector.VectorEnv[Any, Any, Any], steps: int,
                 stats: dict[str, float] | None = None) -> float:
    """Total sub-env steps/s over ``steps`` lockstep calls of ``venv.step``.

    When given, ``stats`` receives ``python_cpu_us`` per sub-env step and the median, p90 and
    p99 of one ``step`` call (``median_ms``, ``p90_ms``, ``p99_ms``).
    """
    actions = (ACTION,) * venv.num_envs
    calls: list[float] = []
    t0, py0 = time.perf_counter(), python_cpu()
    for _ in range(steps):
        started = time.perf_counter()
        obs, _r, terminated, truncated, info = venv.step(actions)
        calls.append(time.perf_counter() - started)
        if terminated.any() or truncated.any() or "error" in info:
            raise RuntimeError(f"a step failed: {obs['text']!r} {info.get('error')}")
    elapsed = time.perf_counter() - t0
    if stats is not None:
        stats["python_cpu_us"] = (python_cpu() - py0) / (steps * venv.num_envs) * 1e6
        for name, pct in (("median_ms", 50), ("p90_ms", 90), ("p99_ms", 99)):
            stats[name] = ms(percentile(calls, pct))
    return steps * venv.num_envs / elapsed


def run(quick: bool = False) -> list[Row]:
    steps = 50 if quick else 200
    rounds = 1 if quick else 3
    print(f"vector steps: {ENVS} envs x {steps} steps, median of {rounds} round(s); "
          f"{load_note()}")
    options = {"task_id": TASK_ID}
    envs = [taskgym.make(ENV_ID, max_steps=10**9) for _ in range(ENVS)]
    native = taskgym.make_vec(ENV_ID, num_envs=ENVS, max_steps=10**9, stepping="threads")
    on_loop = taskgym.make_vec(ENV_ID, num_envs=ENVS, max_steps=10**9, stepping="loop")
    shared = gym.vector.AsyncVectorEnv(
        [lambda: taskgym.make(ENV_ID, max_steps=10**9) for _ in range(ENVS)])
    rates: dict[str, list[float]] = {"threads": [], "native": [], "loop": [], "async": []}
    cpu: dict[str, list[float]] = {"threads": [], "native": [], "loop": []}
    calls: dict[str, list[dict[str, float]]] = {"native": [], "loop": [], "async": []}
    try:
        for env in envs:
            env.reset(options=options)
            env.step(ACTION)
        for venv in (native, on_loop, shared):
            venv.reset(options=options)
            venv.step((ACTION,) * ENVS)
        for _ in range(rounds):
            stats: dict[str, float] = {}
            rates["threads"].append(env_parallel_steps(envs, steps, stats))
            cpu["threads"].append(stats["python_cpu_us"])
            stats = {}
            rates["native"].append(vector_steps(native, steps, stats))
            cpu["native"].append(stats["python_cpu_us"])
            calls["native"].append(stats)
            stats = {}
            rates["loop"].append(vector_steps(on_loop, steps, stats))
            cpu["loop"].append(stats["python_cpu_us"])
            calls["loop"].append(stats)
            stats = {}
            rates["async"].append(vector_steps(shared, steps, stats))
            calls["async"].append(stats)
    finally:
        for env in envs:
            env.close()
        native.close()
        on_loop.close()
        shared.close()
    med = {k: statistics.median(v) for k, v in rates.items()}
    def call_ms(way: str) -> str:
        if way not in calls:
            return "(no lockstep)"
        return " / ".join(f"{statistics.median(r[k] for r in calls[way]):.2f}"
                          for k in ("median_ms", "p90_ms", "p99_ms"))

    print(table(["way", "steps/s (median)", "rounds", "host process CPU us/step",
                 "one step() call median / p90 / p99 ms"], [
        [LABELS[way], f"{med[way]:,.0f}", " ".join(f"{v:,.0f}" for v in rates[way]),
         f"{statistics.median(cpu[way]):.0f}" if way in cpu else "(in worker processes)",
         call_ms(way)]
        for way in rates]))
    ratio = med["native"] / med["threads"]
    loop_ratio = med["loop"] / med["threads"]
    rows = [
        Row(f"vector env, stepping='threads', {ENVS} envs x {steps} steps (steps/s; floor: "
            "W4 threads)",
            f"{med['native']:,.0f}", f"{med['threads']:,.0f}", f"{ratio:.2f}x",
            f">= {TARGET_FRACTION}x W4 threads", ratio >= TARGET_FRACTION),
        Row(f"vector env, stepping='loop' (the default), {ENVS} envs x {steps} steps "
            "(steps/s)",
            f"{med['loop']:,.0f}", f"{med['threads']:,.0f}", f"{loop_ratio:.2f}x",
            f">= {TARGET_FRACTION}x W4 threads", loop_ratio >= TARGET_FRACTION),
        Row("vector env (the default, loop) against AsyncVectorEnv, shared memory (steps/s)",
            f"{med['loop']:,.0f}", f"{med['async']:,.0f}",
            f"{med['loop'] / med['async']:.2f}x", "(reported)", True),
    ]
    print_rows("vector steps", rows)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer steps, one round")
    args = parser.parse_args()
    run(args.quick)


if __name__ == "__main__":
    main()
