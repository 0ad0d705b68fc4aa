"""The grader's solid, bounds and success rule, in process (the grader's own modules on the
host's trimesh and manifold3d): a fuzzer of shell layouts, every curated task's and generated
samples' featureless stand-ins, and what is checked before a file is parsed."""

from __future__ import annotations

import importlib.util
import json
import os
import random
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import trimesh
from hypothesis import given, settings
from hypothesis import strategies as st

from taskgym.domains.mesh.verifier import INSIDE_DIR, MeshSettings
from taskgym.paths import envs_dir
from taskgym.tools.view import VIEW_DIR


def inside(name: str) -> Any:
    """The grader's module ``name``, under a name of its own (CAD's inside modules load beside)."""
    spec = importlib.util.spec_from_file_location(f"taskgym_mesh_inside_{name}", INSIDE_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sys.path.append(str(VIEW_DIR))  # the grading kit, which grade.py imports (from /.taskgym-view inside)
grade = inside("grade")  # puts its folder on sys.path
grade.import_modules()  # imports meshlib from there, as the grader's setup does
meshlib = grade.meshlib

TASKS = envs_dir() / "mesh-trimesh-v0" / "tasks"
IOU_TASKS = sorted(p.name for p in TASKS.iterdir()
                   if tomllib.loads((p / "task.toml").read_text())["mesh"].get("score", "iou") == "iou")
SHARED = Path("/work/shared/data/meshes")


def box(low: Any, side: float) -> trimesh.Trimesh:
    return trimesh.creation.box(bounds=[np.asarray(low, float), np.asarray(low, float) + side])


def joined(meshes: list[trimesh.Trimesh]) -> trimesh.Trimesh:
    mesh = trimesh.util.concatenate(meshes)
    mesh.merge_vertices()
    return mesh


# -- class 1: a fuzzer of shells ------------------------------------------------------------
shells = st.lists(st.tuples(st.integers(-3, 3), st.integers(-3, 3), st.integers(-3, 3),
                            st.sampled_from([1, 2, 4]), st.booleans()), min_size=1, max_size=4)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(shells)
def test_an_accepted_mesh_is_a_solid_whose_every_point_is_inside_once_or_not_at_all(
        layout: list[tuple[int, int, int, int, bool]]) -> None:
    """Cubes on a grid (so they touch at vertices, edges and faces, nest and overlap), some
    inside out: whatever the grader accepts has winding number 0 or 1 everywhere, its volume
    is the solid's and its bodies are its outward shells."""
    parts = [box((x, y, z), side) for x, y, z, side, _ in layout]
    parts = [trimesh.Trimesh(p.vertices, p.faces[:, ::-1]) if flip else p
             for p, (*_, flip) in zip(parts, layout, strict=True)]
    mesh = joined(parts)
    try:
        props, solid = meshlib.analyse(mesh)
    except meshlib.MeshError:
        return
    if solid is None:
        assert meshlib.solid_problem(props) is not None
        return
    assert meshlib.solid_problem(props) is None
    points = np.random.default_rng(0).uniform(mesh.bounds[0] - 0.5, mesh.bounds[1] + 0.5, (200, 3)) + 1e-3
    winding = meshlib.winding_number(mesh, points)
    assert np.all((np.abs(winding) < 1e-6) | (np.abs(winding - 1) < 1e-6)), layout
    assert solid.volume() == pytest.approx(mesh.volume, rel=1e-6)
    assert props["bodies"] >= len(solid.decompose())  # bodies touching along faces fuse
    assert meshlib.iou(solid, solid)["iou"] == pytest.approx(1.0)


def test_a_cavity_is_part_of_one_body_and_a_pinch_is_refused() -> None:
    void = box((1, 1, 1), 2)
    hollow = joined([box((0, 0, 0), 4), trimesh.Trimesh(void.vertices, void.faces[:, ::-1])])
    props, solid = meshlib.analyse(hollow)
    assert solid is not None and (props["bodies"], props["cavities"], props["genus"]) == (1, 1, 0)
    assert solid.volume() == pytest.approx(64 - 8)
    props, solid = meshlib.analyse(joined([box((0, 0, 0), 1), box((1, 1, 1), 1)]))
    assert solid is None and props["pinched_vertices"] == 1
    assert "non-manifold vertices" in str(meshlib.solid_problem(props))


# -- class 3: sizes, bounds before parsing, messages ----------------------------------------
def test_the_degenerate_test_is_the_faces_own_so_a_large_honest_mesh_is_a_solid() -> None:
    """A 100 m bar with a finely tessellated 1 mm knob: the knob's faces are tiny next to the
    mesh (under the old test's 1e-10 x size squared) and nowhere near degenerate."""
    knob = trimesh.creation.icosphere(subdivisions=4, radius=1.0)
    knob.apply_translation([100_000, 5, 5])
    bar = trimesh.creation.box(bounds=[[0, 0, 0], [100_000, 10, 10]])
    part = trimesh.boolean.union([bar, knob], engine="manifold")
    props, solid = meshlib.analyse(part)
    assert props["degenerate_faces"] == 0 and solid is not None, meshlib.solid_problem(props)
    for name in ("plate_holes.STL", "quadknot.obj", "angle_block.STL"):  # real meshes, 1e-3 to 1e3 mm
        if (SHARED / name).is_file():
            for factor in (1e-3, 1e3):
                mesh = meshlib.load(str(SHARED / name))
                mesh.apply_scale(factor)
                assert meshlib.solid_problem(meshlib.properties(mesh)) is None, (name, factor)


def test_a_gltf_expansion_is_refused_before_any_parser_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.domains.mesh.test_forgery import glb, placements

    def parse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the file was parsed")

    monkeypatch.setattr(meshlib.trimesh, "load", parse)
    with pytest.raises(meshlib.MeshError, match="more than 1024"):
        meshlib.load("s.glb", glb(placements(40_000)))


def test_an_unexpected_grader_error_names_no_hidden_value(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    # graded() leaves an unexpected error to the grading kit, which reports its type and place
    import gradekit

    secret = 46905.99911
    def broken(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"target volume {secret}")

    monkeypatch.setattr(grade, "grade", broken)
    (tmp_path / "s.stl").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    read, write = os.pipe()
    channel = gradekit.Channel("n" * 32, write)
    channel.started()
    with pytest.raises(AssertionError) as raised:
        grade.graded({}, {}, {})
    channel.failed(raised.value)
    channel.close()
    with os.fdopen(read) as report:
        record = json.loads(report.read().splitlines()[-1].split(" ", 1)[1])
    assert record["final"] is True and record["gate"] is False, record
    assert "AssertionError" in record["reason"] and record["error"]["type"] == "AssertionError"
    assert str(secret) not in json.dumps(record) and "46905" not in json.dumps(record), record


# -- class 2: every task's featureless stand-ins fail, its target succeeds -----------------
def grade_settings(task: Path) -> dict[str, Any]:
    table = tomllib.loads((task / "task.toml").read_text())["mesh"]
    return MeshSettings.model_validate(table).model_dump()


def check_task(task: Path, tmp: Path) -> None:
    tests = task / "tests"
    files = {str(p.relative_to(tests)): p.read_bytes() for p in tests.rglob("*") if p.is_file()}
    found = grade_settings(task)
    name = next(n for n in files if n.startswith("target."))
    part = meshlib.cleaned(meshlib.load(name, files[name]))
    (tmp / name).write_bytes(files[name])
    assert grade.grade(str(tmp / name), found, files, grade.references(found, files))["success"], task.name
    for label, stand_in in (("bounding box", trimesh.creation.box(bounds=part.bounds)),
                            ("convex hull", part.convex_hull)):
        solid, target = meshlib.analyse(stand_in)[1], meshlib.analyse(part)[1]
        if solid is not None and meshlib.iou(solid, target)["iou"] >= 1 - 1e-3:
            continue  # the target is its own box or hull: no feature to miss
        stand_in.export(tmp / "s.ply")
        record = grade.grade(str(tmp / "s.ply"), found, files, grade.references(found, files))
        assert not record.get("success"), (task.name, label, record)


@pytest.mark.parametrize("task_id", IOU_TASKS)
def test_a_curated_tasks_bounding_box_and_hull_do_not_succeed_and_its_target_does(task_id: str,
                                                                                 tmp_path: Path) -> None:
    check_task(TASKS / task_id, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["build", "edit", "hollow", "fit", "repair"])
def test_a_generated_tasks_bounding_box_and_hull_do_not_succeed_and_its_target_does(family: str,
                                                                                   tmp_path: Path) -> None:
    from taskgym.domains.mesh.generators import generate

    for seed in random.Random(family).sample(range(1000), 3):
        generate(family, seed, tmp_path / f"{family}-{seed}")
        check_task(tmp_path / f"{family}-{seed}", tmp_path)
    assert os.listdir(tmp_path)
