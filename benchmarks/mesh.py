"""mesh-trimesh-v0 timings: a warm run_python step on a 10k-face mesh, and grading a 10k-face
part (a fresh sandbox, trimesh's import and the manifold3d booleans included), beside CAD's
grading of a simple part.

    python3 benchmarks/mesh.py [--quick]        (needs pip install 'taskgym[mesh]'; CAD's
                                                 figure also needs 'taskgym[cad]')
Targets: warm step < 50 ms median; grading < 500 ms median.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import taskgym
from taskgym.core.task import load_task
from taskgym.domains.mesh.generators import Design, write_task
from taskgym.domains.mesh.verifier import grade_file
from taskgym.sandbox.local import LocalBackend

TORUS = ("part = trimesh.creation.torus(20, 5, major_sections=100, minor_sections=50)\n"
         "part.export('part.stl')\n")


def median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.0f} ms (min {min(samples) * 1000:.0f}, n={len(samples)})"


def main(quick: bool) -> None:
    runs = 5 if quick else 20
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "torus-10k"
        write_task(Design("10k-face torus", "Model a torus.", TORUS, "part.stl"), folder, "build")
        env = taskgym.make("mesh-trimesh-v0", tasks=str(folder), max_steps=10 * runs)
        print(f"load average {os.getloadavg()[0]:.1f}")
        env.reset(seed=0)
        started = time.monotonic()
        env.step({"tool": "run_python", "args": {"code": TORUS}})
        print(f"first run_python step (starts the worker): {(time.monotonic() - started) * 1000:.0f} ms")
        code = "m = trimesh.load('part.stl')\nprint(len(m.faces), m.is_watertight, round(m.volume, 3))\n"
        steps, user, empty, printing = [], [], [], []
        for _ in range(runs):
            started = time.monotonic()
            obs, _, _, _, info = env.step({"tool": "run_python", "args": {"code": code}})
            steps.append(time.monotonic() - started)
            user.append(info["timing"]["user_code_sec"])
            started = time.monotonic()
            _, _, over, cut, _ = env.step({"tool": "run_python", "args": {"code": "pass"}})
            assert not (over or cut)
            empty.append(time.monotonic() - started)
            started = time.monotonic()
            long, _, _, _, _ = env.step({"tool": "run_python", "args": {"code": "print('x' * 60000)"}})
            printing.append(time.monotonic() - started)
        assert "10000 True" in obs["text"], obs
        assert "x" * 3000 + "\n[...]" in long["text"], long
        print(f"warm run_python step, load + check a 10k-face STL: {median_ms(steps)}  [target < 50 ms]")
        print(f"  of which the user's code: {median_ms(user)}; "
              f"a warm step running `pass`: {median_ms(empty)}")
        print(f"  a warm step printing 60 KB (its reply cut at 3,000 characters): {median_ms(printing)}")
        env.close()
        task = load_task(folder, "mesh")
        data = (folder / "tests" / "target.stl").read_bytes()
        backend = LocalBackend()
        grades, imports, compares = [], [], []
        for _ in range(max(3, runs // 2)):
            started = time.monotonic()
            result = grade_file(task, "part.stl", data, backend)
            grades.append(time.monotonic() - started)
            timing = result.details["timing"]
            imports.append(timing["import_sec"])
            compares.append(timing["grade_sec"])
            assert result.success, result
        print(f"grade a 10k-face part (fresh sandbox included): {median_ms(grades)}  [target < 500 ms]")
        print(f"  of which the grader's imports: {median_ms(imports)}; reading, checks and IoU: "
              f"{median_ms(compares)}")
    if importlib.util.find_spec("cadquery") is not None:
        from taskgym.domains.cad.verifier import grade_code

        cad = taskgym.make("cad-cadquery-v0").unwrapped
        task = cad.task_set.get("plate-four-holes")  # type: ignore[attr-defined]
        code = (task.path / "solution" / "solve.py").read_bytes()
        times = []
        for _ in range(3):
            started = time.monotonic()
            grade_code(task, code, backend)
            times.append(time.monotonic() - started)
        print(f"CAD, grade plate-four-holes (fresh sandbox included): {median_ms(times)}")


if __name__ == "__main__":
    main("--quick" in sys.argv[1:])
