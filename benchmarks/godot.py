"""game-godot-v0: time of run_scene (180 physics frames of a 50-node scene, engine start
included) and of grading one project (a fresh sandbox, the grader and the engine included).

Targets: run_scene median < 300 ms; grading median < 1 s.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_note, median, ms, percentile  # noqa: E402

import taskgym  # noqa: E402
from taskgym.domains.game.generators import FLOOR, ground, tscn, xf  # noqa: E402
from taskgym.domains.game.verifier import ENGINE, grade_project  # noqa: E402

TASK = "physics-104"
RUN_TARGET_MS, GRADE_TARGET_MS = 300.0, 1000.0


def fifty_nodes() -> str:
    """Floor (2 nodes), the root, and 47 more: 23 falling boxes with their shapes and a light."""
    boxes = []
    for i in range(23):
        boxes += [(f"Box{i}", "RigidBody", ".", {"transform": xf(i % 5 * 1.5 - 3, 2 + i // 5 * 1.2, 0)}),
                  ("Shape", "CollisionShape", f"Box{i}", {"shape": "SubResource( 2 )"})]
    nodes = ground([*boxes, ("Sun", "DirectionalLight", ".", {})])
    assert len(nodes) == 50
    return tscn(nodes, [FLOOR, ("BoxShape", {"extents": "Vector3( 0.5, 0.5, 0.5 )"})])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    runs = 5 if parser.parse_args().quick else 15
    print(f"game-godot-v0 tool and grading times; {load_note()}")
    env = taskgym.make("game-godot-v0")
    base = env.unwrapped
    try:
        env.reset(options={"task_id": TASK})
        base.session.write_file("main.tscn", fifty_nodes().encode())  # type: ignore[attr-defined]
        bare, steps, one_frame, grades = [], [], [], []
        for _ in range(runs):
            started = time.monotonic()
            env.step({"tool": "run_scene", "args": {"frames": 1, "nodes": ["Box0"]}})
            one_frame.append(time.monotonic() - started)
            started = time.monotonic()
            base.session.exec(f"{ENGINE} --version")  # type: ignore[attr-defined]
            bare.append(time.monotonic() - started)
            started = time.monotonic()
            _, _, _, _, info = env.step({"tool": "run_scene", "args": {"frames": 180, "nodes": ["Box0"]}})
            steps.append(time.monotonic() - started)
            assert "error" not in info, info
        task = base.task  # type: ignore[attr-defined]
        for action in base.oracle_actions(task)[:-1]:  # type: ignore[attr-defined]
            env.step(action)  # grade the solved project
        for _ in range(runs):
            started = time.monotonic()
            reward = grade_project(task, base.session, base.backend, None)  # type: ignore[attr-defined]
            grades.append(time.monotonic() - started)
        print(f"\nrun_scene, 180 physics frames of a 50-node scene (one env.step, {runs} runs):")
        print(f"  engine start alone ({ENGINE} --version in the sandbox), median: {ms(median(bare)):7.1f} ms")
        print(f"  run_scene of 1 frame (engine start, scene load), median: {ms(median(one_frame)):7.1f} ms")
        print(f"  run_scene median / p95: {ms(median(steps)):7.1f} / {ms(percentile(steps, 95)):.1f} ms"
              f"  target < {RUN_TARGET_MS:.0f} ms: {'PASS' if ms(median(steps)) < RUN_TARGET_MS else 'FAIL'}")
        print(f"\ngrading the solved {TASK} (fresh sandbox + grade.py + engine + check, {runs} runs):")
        print(f"  median / p95: {ms(median(grades)):7.1f} / {ms(percentile(grades, 95)):.1f} ms  target < "
              f"{GRADE_TARGET_MS:.0f} ms: {'PASS' if ms(median(grades)) < GRADE_TARGET_MS else 'FAIL'}"
              f"  [{reward.summary()}; in the sandbox {reward.details.get('verifier_seconds')} s, "
              f"CPU {reward.details.get('verifier_cpu_seconds')} s]")
    finally:
        env.close()


if __name__ == "__main__":
    main()
