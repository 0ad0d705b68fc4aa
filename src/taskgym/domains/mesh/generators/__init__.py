"""Seeded task families of ``mesh-trimesh-v0``, one per task kind, and the curated tasks' maker.

Each family (a module of this package, described in its docstring) exposes
``design(rng) -> Design``: the instruction, the input files, the oracle's trimesh code and,
where the target is not what that code makes (a repair's undamaged original), the target.
:func:`write_task` turns a design into a task folder: the inputs in ``environment/files/``,
the oracle in ``solution/solve.py`` and the hidden target in ``tests/`` (made by running the
oracle's code on the host when the design gives none). Needs trimesh on the host.
"""

from __future__ import annotations

import importlib
import io
import os
import random
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from taskgym.core.task_folder import task_toml, write_task_folder
from taskgym.errors import TaskgymError

if TYPE_CHECKING:
    import trimesh

__all__ = ["DATA", "FAMILIES", "Design", "export", "generate", "real", "real_mesh", "write_task"]

FAMILIES = ("build", "repair", "edit", "hollow", "fit", "decimate", "scene")
DATA = Path(__file__).parent.parent / "data"
"""The real meshes (trimesh's test models, MIT: LICENSE.md and ORIGIN.md there)."""
REAL_NOTICES = ("LICENSE.md", "ORIGIN.md")


@dataclass(frozen=True)
class Design:
    """One task."""

    title: str
    instruction: str
    solve: str
    """The oracle: Python run in /app by run_python (trimesh, manifold3d, np imported)."""
    output: str
    inputs: dict[str, bytes | str] = field(default_factory=dict)
    real: bool = False
    """Inputs or target come from the real meshes in :data:`DATA` (their notices are copied)."""
    target: bytes | str | None = None
    """The hidden target, in ``output``'s format; ``None``: what ``solve`` writes."""
    hidden: dict[str, bytes] = field(default_factory=dict)
    """More hidden files for ``tests/`` (a scene's parts)."""
    settings: dict[str, Any] = field(default_factory=dict)
    difficulty: str = "medium"
    tags: tuple[str, ...] = ()


def real(name: str) -> bytes:
    return (DATA / name).read_bytes()


def real_mesh(name: str) -> trimesh.Trimesh:
    """One of the real meshes, loaded (coincident vertices merged)."""
    import trimesh

    mesh = trimesh.load(io.BytesIO(real(name)), file_type=name.rsplit(".", 1)[1].lower(), force="mesh")
    assert isinstance(mesh, trimesh.Trimesh)
    return mesh


def export(mesh: trimesh.Trimesh, kind: str) -> bytes:
    """``mesh`` as a file of ``kind`` (trimesh gives text formats as ``str``)."""
    data = mesh.export(file_type=kind)
    assert isinstance(data, bytes | str)
    return _bytes(data)


def write_task(design: Design, dest: Path, family: str) -> None:
    """Write ``design`` as a complete task folder at ``dest``."""
    files, solution, tests = dest / "environment" / "files", dest / "solution", dest / "tests"
    for folder in (files, solution, tests):
        folder.mkdir(parents=True)
    settings = {"output": design.output, **design.settings}
    meshes = [n for n in design.inputs if n.rsplit(".", 1)[-1].lower() in ("stl", "obj", "ply", "off", "glb")]
    if settings.get("score", "iou") == "iou" and len(meshes) == 1:  # the gate's "changed at all?"
        settings["unlike_input"] = "input." + meshes[0].rsplit(".", 1)[1].lower()
        (tests / settings["unlike_input"]).write_bytes(_bytes(design.inputs[meshes[0]]))
    config = task_toml(difficulty=design.difficulty, category=family,
                       tags=("mesh", family, *design.tags),
                       limits={"max_steps": 40, "timeout_sec": 1800, "verifier_timeout_sec": 180,
                               "memory_mb": 2048},
                       tables={"mesh": settings})
    write_task_folder(dest, f"# {design.title}\n\n{design.instruction.strip()}\n", config)
    code = "import manifold3d\nimport numpy as np\nimport trimesh\n\n" + design.solve.strip() + "\n"
    (solution / "solve.py").write_text(code)
    for name, data in design.inputs.items():
        (files / name).write_bytes(_bytes(data))
    for name, data in design.hidden.items():
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_bytes(_bytes(data))
    target = design.target if design.target is not None else _run(code, design.inputs, design.output)
    if target:
        (tests / f"target{Path(design.output).suffix}").write_bytes(_bytes(target))
    if design.real:
        for folder in (files, tests):
            for notice in REAL_NOTICES:
                shutil.copy(DATA / notice, folder / notice)


def _bytes(data: bytes | str) -> bytes:
    """trimesh exports text formats (OBJ, OFF) as ``str``."""
    return data.encode() if isinstance(data, str) else data


def _run(code: str, inputs: dict[str, bytes | str], output: str) -> bytes:
    """What the oracle's ``code`` writes as ``output``, run on the host in a scratch folder."""
    with tempfile.TemporaryDirectory(prefix="taskgym-mesh-gen-") as tmp:
        for name, data in inputs.items():
            (Path(tmp) / name).write_bytes(_bytes(data))
        done = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONHASHSEED": "0"})
        if done.returncode != 0 or not (Path(tmp) / output).is_file():
            raise TaskgymError(f"a mesh task's oracle failed on the host:\n{done.stderr[-2000:]}")
        return (Path(tmp) / output).read_bytes()


def generate(family: str, seed: int, dest: Path) -> None:
    """Write task ``<family>-<seed>`` at ``dest``."""
    module = importlib.import_module(f"taskgym.domains.mesh.generators.{family}")
    write_task(module.design(random.Random(f"mesh-{family}-{seed}")), dest, family)
