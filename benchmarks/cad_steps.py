"""cad-cadquery-v0: time of one run_cadquery step (first and warm) and of grading one part.

Breakdown: the sandboxed interpreter's start and CadQuery's import (paid once per episode by
the warm worker, and once per grading), against the user's code and the shape inspection.
Target: a warm run_cadquery step for a simple part under 300 ms.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_note, median, ms, percentile  # noqa: E402

import taskgym  # noqa: E402
from taskgym.domains.cad.verifier import INSIDE_MOUNT, grade_code  # noqa: E402

SIMPLE = "plate-four-holes"
TYPICAL = ("plate-four-holes", "flanged-housing")
TARGET_MS = 300.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    options = parser.parse_args()
    warm_runs = 8 if options.quick else 25
    print(f"cad-cadquery-v0 step and grading times; {load_note()}")
    env = taskgym.make("cad-cadquery-v0")
    base = env.unwrapped
    try:
        env.reset(options={"task_id": SIMPLE})
        code = (base.task.path / "solution" / "solve.py").read_text()  # type: ignore[attr-defined]
        session = base.session  # type: ignore[attr-defined]
        started = time.monotonic()
        result = session.exec("python3 -I -S -c pass")
        bare = time.monotonic() - started
        started = time.monotonic()
        result = session.exec("python3 -I -B -c 'import cadquery'")
        imported = time.monotonic() - started
        assert result.exit_code == 0, result.stderr
        step = {"tool": "run_cadquery", "args": {"code": code}}
        started = time.monotonic()
        _, _, _, _, info = env.step(step)
        first = time.monotonic() - started
        assert info["ok"], info
        warm, user, inspect = [], [], []
        for _ in range(warm_runs):
            started = time.monotonic()
            _, _, _, _, info = env.step(step)
            warm.append(time.monotonic() - started)
            user.append(info["timing"]["user_code_sec"])
            inspect.append(info["timing"]["inspect_sec"])
        started = time.monotonic()
        env.step({"tool": "render", "args": {"view": "iso"}})
        render = time.monotonic() - started
        print(f"\nrun_cadquery on {SIMPLE} (one env.step each):")
        print(f"  interpreter start in the sandbox (python3 -I -S -c pass): {ms(bare):8.1f} ms")
        print(f"  interpreter start + import cadquery (once per worker):    {ms(imported):8.1f} ms")
        print(f"  first step (starts the worker: start + import + run):     {ms(first):8.1f} ms")
        print(f"  warm step, median / p95 over {warm_runs}:                 "
              f"{ms(median(warm)):8.1f} / {ms(percentile(warm, 95)):.1f} ms")
        print(f"    of which the user's code (median):                      {ms(median(user)):8.1f} ms")
        print(f"    of which inspecting and saving the shape (median):      {ms(median(inspect)):8.1f} ms")
        print(f"    the rest (the pipes, the child's bounds, JSON, the HMAC):   "
              f"{ms(median(warm) - median(user) - median(inspect)):8.1f} ms")
        print(f"  render (iso):                                             {ms(render):8.1f} ms")
        verdict = "PASS" if ms(median(warm)) <= TARGET_MS else "FAIL"
        print(f"  target: warm step <= {TARGET_MS:.0f} ms: {verdict}")
        print(f"\ngrading (a fresh sandbox running {INSIDE_MOUNT}/grade.py):")
        for task_id in TYPICAL:
            task = base.task_set.get(task_id)  # type: ignore[attr-defined]
            solution = (task.path / "solution" / "solve.py").read_bytes()
            started = time.monotonic()
            reward = grade_code(task, solution, base.backend)  # type: ignore[attr-defined]
            total = time.monotonic() - started
            timing = reward.details["timing"]
            rest = total - sum(timing.values())
            print(f"  {task_id}: total {total:.2f} s = start + import {timing['import_sec']:.2f} s"
                  f" + user code {timing['user_code_sec']:.2f} s + compare (IoU, checks, chamfer) "
                  f"{timing['compare_sec']:.2f} s + sandbox and interpreter start {rest:.2f} s"
                  f"  [{reward.summary()}]")
    finally:
        env.close()


if __name__ == "__main__":
    main()
