"""Warm graders: CAD and mesh grading wall time and CPU, zygote and pool against cold.

    python3 benchmarks/warm_grading.py [--quick] [--backend local|docker]

Cold: ``TASKGYM_WARM_GRADERS=0``, the grader's sandbox started for the grade.
Pool (``TASKGYM_GRADER_ZYGOTE=0``): the grade finds a pre-started grader that imported CadQuery
(trimesh) already; between grades the benchmark waits until the pool refilled, as an agent's
episode would (the refill overlaps the episode). Zygote (local backend only, the default
there): the kind's grader zygote, which imported once, forks the grade into fresh namespaces.
The CPU of a grade is its sandbox's (cold, pool: the cgroup over the sandbox's whole life, the
import included, pre-started or not; zygote: the zygote's CPU to fork it plus everything the
fork and its descendants used, from their rusage) plus this process's own CPU and that of its
reaped children (bwrap) from the grade's start until its replacement is ready; the engine's
own CPU (dockerd, containerd) is not counted, nor the zygote's one import (once per process
and kind, about one cold import). Targets (issue 15, issue 13): CAD grade <= 1.0 s median
warm; CPU per grade <= 40 % of cold; a 10k-face mesh grade < 500 ms median.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import load_note, median  # noqa: E402

import taskgym  # noqa: E402
from taskgym.core.reward import RewardResult  # noqa: E402
from taskgym.sandbox import Backend, get_backend  # noqa: E402
from taskgym.sandbox.warm import close_warm_graders, warm_pools  # noqa: E402

CAD_TASK = "plate-four-holes"
TORUS = ("part = trimesh.creation.torus(20, 5, major_sections=100, minor_sections=50)\n"
         "part.export('part.stl')\n")


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(grade: Callable[[], RewardResult], backend: Backend, runs: int, path: str
            ) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (host + sandbox) of ``runs`` grades on ``path`` (``cold``,
    ``pool`` or ``zygote``)."""
    warm = path != "cold"
    os.environ["TASKGYM_WARM_GRADERS"] = "1" if warm else "0"
    os.environ["TASKGYM_GRADER_ZYGOTE"] = "1" if path == "zygote" else "0"
    close_warm_graders(backend)
    if warm:
        grade()  # the first grade starts its grader on the spot and fills the pool
        for pool in warm_pools(backend):
            pool.ready(300)
    walls, cpus = [], []
    for _ in range(runs):
        host = _cpu()
        started = time.monotonic()
        result = grade()
        walls.append(time.monotonic() - started)
        assert result.success, result
        assert result.details["grader_path"] == path, result.details["grader_path"]
        for pool in warm_pools(backend):
            pool.ready(300)  # the replacement's start is this grade's cost too
        cpus.append(_cpu() - host + float(result.details["verifier_cpu_seconds"]))
    close_warm_graders(backend)
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--backend", default="local", choices=("local", "docker"))
    options = parser.parse_args()
    runs = 3 if options.quick else 7
    backend = get_backend(options.backend)
    print(f"warm graders on the {options.backend} backend, {runs} grades each; {load_note()}")
    from taskgym.domains.cad.verifier import grade_code

    cad = taskgym.make("cad-cadquery-v0").unwrapped
    task = cad.task_set.get(CAD_TASK)  # type: ignore[attr-defined]
    code = (task.path / "solution" / "solve.py").read_bytes()
    paths = ["cold", "pool", *(["zygote"] if options.backend == "local" else [])]
    cad = {path: measure(lambda: grade_code(task, code, backend), backend, runs, path)
           for path in paths}
    cold_wall, cold_cpu = cad["cold"]
    print(f"\nCAD, grade {CAD_TASK} (oracle), median over {runs}:")
    for path in paths[1:]:
        wall, cpu = cad[path]
        ratio = median(cpu) / median(cold_cpu)
        print(f"  {path}: wall {median(wall):.2f} s (min {min(wall):.2f}; cold "
              f"{median(cold_wall):.2f} s)  [target <= 1.0 s: "
              f"{'PASS' if median(wall) <= 1.0 else 'FAIL'}]; CPU host + sandbox {median(cpu):.2f} s "
              f"(cold {median(cold_cpu):.2f} s) = {ratio:.0%} of cold  [target <= 40 %: "
              f"{'PASS' if ratio <= 0.4 else 'FAIL'}]")
    warm_wall = cad[paths[-1]][0]
    try:
        from taskgym.core.task import load_task
        from taskgym.domains.mesh.generators import Design, write_task
        from taskgym.domains.mesh.verifier import grade_file
    except ImportError as exc:
        print(f"\nmesh: skipped ({exc}; pip install 'taskgym[mesh]')")
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "torus-10k"
        write_task(Design("10k-face torus", "Model a torus.", TORUS, "part.stl"), folder, "build")
        mesh_task = load_task(folder, "mesh")
        data = (folder / "tests" / "target.stl").read_bytes()
        mesh_cold, mesh_cold_cpu = measure(lambda: grade_file(mesh_task, "part.stl", data, backend),
                                           backend, runs, "cold")
        mesh_warm, mesh_warm_cpu = measure(lambda: grade_file(mesh_task, "part.stl", data, backend),
                                           backend, runs, paths[-1])
    print(f"\nmesh, grade a 10k-face part (fresh sandbox included), {paths[-1]}, median over {runs}:")
    print(f"  wall: cold {median(mesh_cold) * 1000:.0f} ms, warm {median(mesh_warm) * 1000:.0f} ms "
          f"(min {min(mesh_warm) * 1000:.0f})  [target < 500 ms: "
          f"{'PASS' if median(mesh_warm) < 0.5 else 'FAIL'}]; CAD's warm grade beside it: "
          f"{median(warm_wall) * 1000:.0f} ms")
    print(f"  CPU host + sandbox: cold {median(mesh_cold_cpu):.2f} s, warm {median(mesh_warm_cpu):.2f} s")


if __name__ == "__main__":
    main()
