"""Warm graders: CAD and mesh grading wall time and CPU, zygote and pool against cold, one
grade at a time, in bursts, and in a realistic RL pattern.

    python3 benchmarks/warm_grading.py [--quick] [--backend local|docker] [--burst N] [--envs K]

(a) One grade. Cold: the backend's ``warm_graders`` is 0, the grader's sandbox started for the
grade. Pool (a local backend's ``grader_zygote`` off): the grade finds a pre-started grader that imported
CadQuery (trimesh) already; between grades the benchmark waits until the pool refilled, as an
agent's episode would (the refill overlaps the episode). Zygote (local backend only, the
default there): the kind's grader zygote, which imported once, forks the grade into fresh
namespaces. The CPU of a grade is its sandbox's (cold, pool: the cgroup over the sandbox's
whole life, the import included, pre-started or not; zygote: the zygote's CPU to fork it plus
everything the fork and its descendants used, from their rusage) plus this process's own CPU
and that of its reaped children (bwrap) from the grade's start until its replacement is ready;
the engine's own CPU (dockerd, containerd) is not counted, nor the zygote's one import (once
per process and kind, about one cold import). (b) and (c) take the backend's default path.

(b) N grades back to back: with no episode expecting a grade the pool keeps one spare, so each
grade of the burst waits for the grader the previous one started; with N users expecting a
grade (:class:`taskgym.sandbox.grading.warm_leases.Lease`, what N envs' resets hold) N graders boot before the
burst (the benchmark waits for them, as N episodes running meanwhile would) and each grade
takes its own.

(c) An RL pattern: K envs (sharing one backend) reset, each takes a few tool steps, then each
submits; the figure is the wall time of the submit step (grading included) and the grade's own
``verifier_seconds``. Each reset pre-starts a grader, so the import overlaps the steps.

Targets (issue 15, issue 13): CAD grade <= 1.0 s median warm; CPU per grade <= 40 % of cold; a
10k-face mesh grade < 500 ms median, reported beside CAD's.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_note, median  # noqa: E402

import taskgym  # noqa: E402
from taskgym.core.reward import RewardResult  # noqa: E402
from taskgym.sandbox import Backend, get_backend  # noqa: E402
from taskgym.sandbox.grading import Grader  # noqa: E402
from taskgym.sandbox.grading.warm import close_warm_graders, warm_pools  # noqa: E402
from taskgym.sandbox.grading.warm_leases import Lease  # noqa: E402

CAD_TASK = "plate-four-holes"
TORUS = ("part = trimesh.creation.torus(20, 5, major_sections=100, minor_sections=50)\n"
         "part.export('part.stl')\n")


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _ready(backend: Backend) -> None:
    for pool in warm_pools(backend):
        pool.ready(300)


def measure(grade: Callable[[Backend], RewardResult], backend: Backend, runs: int, path: str
            ) -> tuple[list[float], list[float]]:
    """(a) Wall seconds and CPU seconds (host + sandbox) of ``runs`` grades on ``backend`` by
    ``path`` (``cold``: its ``warm_graders`` is 0; ``pool`` or ``zygote``)."""
    close_warm_graders(backend)
    try:
        if backend.warm_graders:
            grade(backend)  # the first grade starts its grader on the spot and fills the pool
            _ready(backend)
        walls, cpus = [], []
        for _ in range(runs):
            host = _cpu()
            started = time.monotonic()
            result = grade(backend)
            walls.append(time.monotonic() - started)
            assert result.success, result
            assert result.details["grader_path"] == path, result.details["grader_path"]
            _ready(backend)  # the replacement's start is this grade's cost too
            cpus.append(_cpu() - host + float(result.details["verifier_cpu_seconds"]))
    finally:
        close_warm_graders(backend)
    return walls, cpus


def burst(grade: Callable[[Backend], RewardResult], grader: Grader, backend: Backend, size: int,
          rounds: int, sized: bool) -> list[float]:
    """(b) Wall seconds of each grade of ``rounds`` bursts of ``size`` grades back to back,
    with ``size`` users expecting a grade (``sized``) or none (one spare)."""
    close_warm_graders(backend)
    leases = [Lease(backend, grader.spec, grader.argv, grader.preload or ())
              for _ in range(size if sized else 0)]
    walls = []
    try:
        if not sized:
            grade(backend)  # fills the pool's one spare
        for _ in range(rounds):
            for lease in leases:
                lease.expect()
            _ready(backend)
            for index in range(size):
                if leases:
                    leases[index].settle()
                started = time.monotonic()
                result = grade(backend)
                walls.append(time.monotonic() - started)
                assert result.success, result
    finally:
        for lease in leases:
            lease.close()
        close_warm_graders(backend)
    return walls


def episodes(make: Callable[[], Any], reset: dict[str, Any], step: dict[str, Any],
             steps: int, count: int, rounds: int) -> tuple[list[float], list[float]]:
    """(c) ``rounds`` times: ``count`` envs reset, take ``steps`` steps each (in turn), then
    submit one after the other; the submit steps' wall seconds and their grades' own."""
    envs = [make() for _ in range(count)]
    submits, graders = [], []
    try:
        for _ in range(rounds):
            for env in envs:
                env.reset(options=reset)
            for _ in range(steps):
                for env in envs:
                    env.step(step)
            for env in envs:
                actions = env.unwrapped.oracle_actions(env.unwrapped.task)
                for action in actions[:-1]:
                    env.step(action)
                started = time.monotonic()
                *_, terminated, _, _ = env.step(actions[-1])
                submits.append(time.monotonic() - started)
                reward = env.unwrapped.last_reward
                assert terminated and reward.success, reward
                graders.append(float(reward.details["verifier_seconds"]))
    finally:
        for env in envs:
            env.close()
    return submits, graders


def _ms(values: list[float]) -> str:
    return f"{median(values) * 1000:.0f} ms (min {min(values) * 1000:.0f}, n={len(values)})"


def _report(name: str, target: tuple[str, float], one: dict[str, tuple[list[float], list[float]]],
            spare: list[float], sized: list[float], rl: tuple[list[float], list[float]],
            size: int, count: int, steps: int) -> None:
    sign, bound = target
    cold_wall, cold_cpu = one["cold"]
    print(f"\n{name}: medians; {load_note()}")
    print(f"  (a) one grade, cold: {_ms(cold_wall)}; CPU host + sandbox {median(cold_cpu):.2f} s")
    for path, (wall, cpu) in one.items():
        if path == "cold":
            continue
        met = median(wall) < bound if sign == "<" else median(wall) <= bound
        ratio = median(cpu) / median(cold_cpu)
        print(f"      {path}: {_ms(wall)}  [target {sign} {bound * 1000:.0f} ms: "
              f"{'PASS' if met else 'FAIL'}]; CPU {median(cpu):.2f} s = {ratio:.0%} of cold")
    print(f"  (b) {size} grades back to back, one spare: {_ms(spare)}; "
          f"pool sized to the burst: {_ms(sized)}")
    print(f"  (c) {count} envs x ({steps} steps, then submit): submit step {_ms(rl[0])}, "
          f"of which the grade {_ms(rl[1])}")


def _domain(name: str, grade: Callable[[Backend], RewardResult], grader: Grader,
            make: Callable[[], Any], reset: dict[str, Any], step: dict[str, Any],
            backends: tuple[Backend, Backend, Backend], options: argparse.Namespace,
            target: tuple[str, float]) -> None:
    runs, rounds = (3, 1) if options.quick else (7, 2)
    backend, cold_backend, pool_backend = backends
    one = {"cold": measure(grade, cold_backend, runs, "cold"),
           "pool": measure(grade, pool_backend, runs, "pool")}
    if options.backend == "local":
        one["zygote"] = measure(grade, backend, runs, "zygote")
    spare = burst(grade, grader, backend, options.burst, rounds, False)
    sized = burst(grade, grader, backend, options.burst, rounds, True)
    rl = episodes(make, reset, step, options.steps, options.envs, rounds)
    _report(name, target, one, spare, sized, rl, options.burst, options.envs, options.steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--backend", default="local", choices=("local", "docker"))
    parser.add_argument("--burst", type=int, default=4, help="grades back to back in (b)")
    parser.add_argument("--envs", type=int, default=3, help="envs of the RL pattern (c)")
    parser.add_argument("--steps", type=int, default=3, help="steps per episode before submit")
    parser.add_argument("--only", choices=("cad", "mesh"), help="one domain only")
    options = parser.parse_args()
    config: dict[str, Any] = {"type": options.backend, "warm_graders": max(options.burst, options.envs)}
    if options.backend == "local":
        config["grader_zygote"] = True
    backend = get_backend(config)
    pool_backend = (get_backend({**config, "grader_zygote": False}) if options.backend == "local"
                    else backend)
    backends = (backend, get_backend({**config, "warm_graders": 0}), pool_backend)
    print(f"warm graders on the {options.backend} backend (warm_graders={config['warm_graders']}, "
          f"{os.cpu_count()} CPUs); {load_note()}")
    if options.only != "mesh":
        from taskgym.domains.cad.verifier import grade_code, grader_of

        cad = taskgym.make("cad-cadquery-v0").unwrapped
        task = cad.task_set.get(CAD_TASK)  # type: ignore[attr-defined]
        code = (task.path / "solution" / "solve.py").read_bytes()
        _domain("CAD", lambda on: grade_code(task, code, on), grader_of(task),
                lambda: taskgym.make("cad-cadquery-v0", sandbox=backend), {"task_id": CAD_TASK},
                {"tool": "run_cadquery", "args": {"code": code.decode()}}, backends, options,
                ("<=", 1.0))
    if options.only == "cad":
        return
    try:
        from taskgym.core.task import load_task
        from taskgym.domains.mesh.generators import Design, write_task
        from taskgym.domains.mesh.verifier import grade_file
        from taskgym.domains.mesh.verifier import grader_of as mesh_grader
    except ImportError as exc:
        print(f"\nmesh: skipped ({exc}; pip install 'taskgym[mesh]')")
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "torus-10k"
        write_task(Design("10k-face torus", "Model a torus.", TORUS, "part.stl"), folder, "build")
        mesh_task = load_task(folder, "mesh")
        data = (folder / "tests" / "target.stl").read_bytes()
        _domain("mesh", lambda on: grade_file(mesh_task, "submission.stl", data, on),
                mesh_grader(mesh_task),
                lambda: taskgym.make("mesh-trimesh-v0", tasks=str(folder), sandbox=backend),
                {"task_id": mesh_task.id}, {"tool": "run_python", "args": {"code": TORUS}},
                backends, options, ("<", 0.5))


if __name__ == "__main__":
    main()
