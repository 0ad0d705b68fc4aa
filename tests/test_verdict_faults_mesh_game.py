"""The mesh and game graders announce their phases: faults of their own setup give no verdict.

Each fault is injected from outside the sandbox (a grader dependency hidden from the grading
sandbox's view, the task's hidden target or check broken, the grader stalled or dying in its
own setup); the episode must end with ``info["verdict"] == "none"`` and its class, leave
nothing behind, and the next episode must score 1 with the oracle (``no_verdict`` of
tests/test_verdict_faults.py). What the agent's files cause once the grader ``started`` (a
mesh that crashes its parser or asks for too much memory, a project that hangs the engine)
stays a graded zero. Every test runs on both backends, on the warm paths they use by default.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.test_verdict_faults import SUBMIT, no_verdict

import taskgym
from taskgym.domains.game import verifier as game_verifier
from taskgym.domains.mesh import verifier as mesh_verifier
from taskgym.paths import envs_dir
from taskgym.sandbox import Backend
from taskgym.sandbox.docker.images import HOST_PYTHON_IMAGE
from taskgym.sandbox.local import LocalBackend

trimesh = pytest.importorskip("trimesh", reason="the mesh extra is not installed")

PLATE = envs_dir() / "mesh-trimesh-v0" / "tasks" / "plate-four-holes"
MOVER = envs_dir() / "game-godot-v0" / "tasks" / "fix-100"
BEGUN = "def main(channel: Any) -> None:"
"""The first line of grade.py's body, which runs right after the grading kit reported "begun"."""
PART = {"tool": "write_file", "args": {"path": "part.stl", "content": (
    "solid t\n" + "".join(f"facet normal 0 0 0\nouter loop\n{v}endloop\nendfacet\n" for v in (
        "vertex 0 0 0\nvertex 0 1 0\nvertex 1 0 0\n", "vertex 0 0 0\nvertex 1 0 0\nvertex 0 0 1\n",
        "vertex 0 0 0\nvertex 0 0 1\nvertex 0 1 0\n", "vertex 1 0 0\nvertex 0 1 0\nvertex 0 0 1\n"))
    + "endsolid t\n")}}
"""A tetrahedron as the agent's part: the faults below end the grade before it is read."""


def task_copy(source: Path, folder: Path, verifier_timeout: int) -> Path:
    """A copy of the task at ``source`` whose grade may run ``verifier_timeout`` seconds."""
    shutil.copytree(source, folder)
    toml = folder / "task.toml"
    text = toml.read_text()
    head, tail = text.split("[verifier]\ntimeout_sec = ", 1)
    toml.write_text(f"{head}[verifier]\ntimeout_sec = {verifier_timeout}\n{tail.split(chr(10), 1)[1]}")
    return folder


@pytest.fixture()
def mesh_env(tmp_path: Path, backend: Backend) -> Iterator[Any]:
    made = taskgym.make("mesh-trimesh-v0", tasks=str(task_copy(PLATE, tmp_path / "plate", 20)),
                        sandbox=backend)
    yield made
    made.close()


@pytest.fixture()
def game_env(tmp_path: Path, backend: Backend) -> Iterator[Any]:
    if shutil.which(game_verifier.ENGINE) is None:
        pytest.skip("the Godot 3 engine is not installed: ./scripts/install.sh --game")
    made = taskgym.make("game-godot-v0", tasks=str(task_copy(MOVER, tmp_path / "mover", 40)),
                        sandbox=backend)
    yield made
    made.close()


def patched_inside(module: Any, folder: Path, addition: str) -> Path:
    """A copy of ``module``'s in-sandbox scripts whose grade.py runs ``addition`` right after
    its ``begun`` record."""
    shutil.copytree(module.INSIDE_DIR, folder)
    grade = folder / "grade.py"
    source = grade.read_text()
    assert source.count(BEGUN) == 1
    grade.write_text(source.replace(BEGUN, f"{BEGUN}\n    {addition}"))
    return folder


def hide(module: Any, monkeypatch: pytest.MonkeyPatch, cover: dict[str, str],
         image: str | None = None) -> None:
    """The grading sandbox of ``module``'s verifier with ``cover`` (host path: path in the
    sandbox) bound over its system, in ``image`` (when given) on container backends."""
    spec_of = module.grader_spec

    def covered(*args: Any, **kwargs: Any) -> Any:
        spec = spec_of(*args, **kwargs)
        return spec.model_copy(update={"ro_binds": {**spec.ro_binds, **cover},
                                       "image": image or spec.image})

    monkeypatch.setattr(module, "grader_spec", covered)


# -- mesh ----------------------------------------------------------------------------------
NOT_INSTALLED = 'raise ModuleNotFoundError("No module named \'trimesh\'", name="trimesh")\n'


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
@pytest.mark.parametrize("cover", ["", NOT_INSTALLED], ids=["emptied", "not-installed"])
def test_mesh_grader_without_trimesh(mesh_env: Any, backend: Backend, warm: bool, cover: str,
                                     tmp_path: Path, monkeypatch) -> None:
    # trimesh's folder covered by an empty one (it imports as a namespace package, without
    # its names) or by a package that raises what an absent one does; warm: the pre-started
    # grader (a zygote, a pool) imports the grader's modules ahead of the grade and leaves
    # what fails to the grader's setup; cold: a sandbox started for the grade
    if not warm:
        monkeypatch.setattr(backend, "warm_graders", 0)
    empty = tmp_path / "empty"
    empty.mkdir()
    if cover:
        (empty / "__init__.py").write_text(cover)
    hide(mesh_verifier, monkeypatch, {str(empty): str(Path(trimesh.__file__).parent)})
    info = no_verdict(mesh_env, [PART], "grader_dependency", repair=monkeypatch.undo)
    assert "cannot import trimesh" in info["error"]


def test_mesh_target_corrupted(mesh_env: Any) -> None:
    mesh_env.reset(seed=0)
    target = mesh_env.unwrapped.task.path / "tests" / "target.stl"
    original = target.read_bytes()
    target.write_bytes(b"solid broken\n  facet normal 0 0 1\n    outer loop\n" * 50)
    try:
        info = no_verdict(mesh_env, [PART], "reference", reset=False,
                          repair=lambda: target.write_bytes(original))
    finally:
        target.write_bytes(original)
    assert "tests/target.stl" in info["error"]


def test_mesh_target_missing(mesh_env: Any) -> None:
    mesh_env.reset(seed=0)
    target = mesh_env.unwrapped.task.path / "tests" / "target.stl"
    away = target.with_name("away.bin")
    target.rename(away)
    try:
        info = no_verdict(mesh_env, [PART], "reference", reset=False, repair=lambda: away.rename(target))
    finally:
        if away.exists():
            away.rename(target)
    assert "no tests/target" in info["error"]


def test_mesh_grader_stalled_in_its_setup(mesh_env: Any, tmp_path: Path, monkeypatch) -> None:
    inside = patched_inside(mesh_verifier, tmp_path / "inside", "time.sleep(600)")
    monkeypatch.setattr(mesh_verifier, "INSIDE_DIR", inside)
    info = no_verdict(mesh_env, [PART], "grader_timeout", repair=monkeypatch.undo)
    assert "in its own setup" in info["error"]


def test_mesh_grader_dying_in_its_setup(mesh_env: Any, tmp_path: Path, monkeypatch) -> None:
    inside = patched_inside(mesh_verifier, tmp_path / "inside", "os._exit(70)")
    monkeypatch.setattr(mesh_verifier, "INSIDE_DIR", inside)
    info = no_verdict(mesh_env, [PART], "grader_crash", repair=monkeypatch.undo)
    assert "died in its own setup" in info["error"]


@pytest.mark.hacks
@pytest.mark.parametrize("content", [
    "ply\nformat ascii 1.0\nelement vertex 4000000000000\nproperty float x\nproperty float y\n"
    "property float z\nelement face 4000000000000\nproperty list uchar int vertex_indices\n"
    "end_header\n0 0 0\n",
    "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty "
    "float z\nelement face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n"
    "0 1 0\n3 0 1 99999999999999999999\n",
], ids=["claims-trillions", "index-out-of-range"])
def test_a_mesh_that_breaks_its_parser_is_graded_zero(mesh_env: Any, content: str) -> None:
    mesh_env.reset(seed=0)
    mesh_env.step({"tool": "write_file", "args": {"path": "part.ply", "content": content}})
    *_, terminated, _, info = mesh_env.step({"tool": "submit", "args": {"path": "part.ply"}})
    assert terminated and info["verdict"] == "graded", info
    assert info["reward"].score == 0.0 and not info["reward"].success


# -- game ----------------------------------------------------------------------------------
def test_game_engine_missing_from_the_grading_sandbox(game_env: Any, backend: Backend,
                                                      tmp_path: Path, monkeypatch) -> None:
    if isinstance(backend, LocalBackend):  # an empty, non-executable file over the engine
        blank = tmp_path / "blank"
        blank.write_bytes(b"")
        blank.chmod(0o644)
        engine = shutil.which(game_verifier.ENGINE)
        assert engine is not None
        hide(game_verifier, monkeypatch, {str(blank): str(Path(engine).resolve())})
    else:  # a container binds folders only: the image the game image is built on, no engine
        hide(game_verifier, monkeypatch, {}, image=HOST_PYTHON_IMAGE)
    info = no_verdict(game_env, [], "grader_dependency", repair=monkeypatch.undo)
    assert "game engine does not run" in info["error"]


def test_game_check_corrupted(game_env: Any) -> None:
    game_env.reset(seed=0)
    check = game_env.unwrapped.task.path / "tests" / "check.gd"
    original = check.read_text()
    check.write_text(original[: original.index("func evaluate")])  # cut short
    try:
        info = no_verdict(game_env, [], "reference", reset=False,
                          repair=lambda: check.write_text(original))
    finally:
        check.write_text(original)
    assert "no evaluate function" in info["error"]


def test_game_check_missing(game_env: Any) -> None:
    game_env.reset(seed=0)
    check = game_env.unwrapped.task.path / "tests" / "check.gd"
    away = check.with_name("away.gd")
    check.rename(away)
    try:
        info = no_verdict(game_env, [], "reference", reset=False, repair=lambda: away.rename(check))
    finally:
        if away.exists():
            away.rename(check)
    assert "check.gd" in info["error"]


def test_game_grader_stalled_in_its_setup(game_env: Any, tmp_path: Path, monkeypatch) -> None:
    inside = patched_inside(game_verifier, tmp_path / "inside", "time.sleep(600)")
    monkeypatch.setattr(game_verifier, "INSIDE_DIR", inside)
    info = no_verdict(game_env, [], "grader_timeout", repair=monkeypatch.undo)
    assert "in its own setup" in info["error"]


@pytest.mark.hacks
def test_a_project_that_hangs_the_engine_is_graded_zero(game_env: Any) -> None:
    game_env.reset(seed=0)
    hang = "extends Spatial\n\nfunc _ready():\n\twhile true:\n\t\tpass\n"
    game_env.step({"tool": "write_file", "args": {"path": "mover.gd", "content": hang}})
    *_, terminated, _, info = game_env.step(SUBMIT)
    assert terminated and info["verdict"] == "graded", info
    assert info["reward"].score == 0.0 and "ran past" in info["reward"].details["reason"]
