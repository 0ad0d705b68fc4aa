"""Wrong meshes score low and reward hacks score zero, through the real grader, on every
backend (the docker variants grade in a fresh container)."""

from __future__ import annotations

import io
from collections.abc import Callable

import numpy as np
import pytest
import trimesh

from taskgym.core.reward import RewardResult
from taskgym.paths import envs_dir

pytestmark = [pytest.mark.sandbox, pytest.mark.hacks]

Grade = Callable[[str, str, bytes], RewardResult]
TASKS = envs_dir() / "mesh-trimesh-v0" / "tasks"
PLATE = "plate-four-holes"


def target(task_id: str) -> trimesh.Trimesh:
    path = next((TASKS / task_id / "tests").glob("target.*"))
    return trimesh.load(path, force="mesh")


def stl(mesh: trimesh.Trimesh) -> bytes:
    return bytes(mesh.export(file_type="stl"))


def zero(result: RewardResult, reason: str) -> None:
    assert (result.score, result.success, result.gate) == (0.0, False, False), result
    assert reason in result.details["reason"], result.details["reason"]


def test_the_target_itself_scores_one_in_every_format(grade: Grade) -> None:
    for kind in ("stl", "obj", "ply", "off", "glb"):
        result = grade(PLATE, f"s.{kind}", bytes(target(PLATE).export(file_type=kind).encode()
                                                 if kind in ("obj", "off") else
                                                 target(PLATE).export(file_type=kind)))
        assert result.success and result.score == 1.0, (kind, result)


@pytest.mark.parametrize("task_id, name", [
    ("repair-busted-holes", "broken.stl"), ("repair-soup", "soup.stl"),
    ("repair-wallhole", "wallhole.obj"), ("repair-not-convex", "not_convex.obj"),
    ("repair-multibody", "multibody.stl")])
def test_the_unchanged_input_of_a_repair_task_scores_zero(grade: Grade, task_id: str, name: str) -> None:
    data = (TASKS / task_id / "environment" / "files" / name).read_bytes()
    zero(grade(task_id, name, data), "not a valid volume")


def test_the_unchanged_input_of_an_edit_task_scores_zero(grade: Grade) -> None:
    data = (TASKS / "drill-7-8ths-cube" / "environment" / "files" / "7_8ths_cube.stl").read_bytes()
    zero(grade("drill-7-8ths-cube", "same.stl", data), "no nearer the target than the unchanged input")


def test_a_watertight_wrong_shape_fails(grade: Grade) -> None:
    sphere = trimesh.creation.icosphere(subdivisions=3, radius=25)
    sphere.apply_translation([50, 30, 4])
    result = grade(PLATE, "s.stl", stl(sphere))
    assert result.gate and not result.success and result.score < 0.3, result
    sphere.apply_translation([500, 0, 0])  # the right size, nowhere near the target
    far = target(PLATE)
    far.apply_translation([0, 0, 100])
    for wrong in (sphere, far):
        result = grade(PLATE, "s.stl", stl(wrong))
        assert result.gate and (result.score, result.success) == (0.0, False), result


def test_a_huge_box_swallowing_the_target_scores_low(grade: Grade) -> None:
    for size in (200.0, 2000.0):
        box = trimesh.creation.box(extents=[size, size, size])
        result = grade(PLATE, "s.stl", stl(box))
        assert result.gate and not result.success and result.score < 0.01, result
        assert "intersection" not in result.components  # with the union, it would tell the target's volume


def test_several_bodies_where_one_is_asked_score_zero(grade: Grade) -> None:
    extra = trimesh.creation.box(extents=[1, 1, 1])
    extra.apply_translation([300, 0, 0])
    zero(grade(PLATE, "s.stl", stl(trimesh.util.concatenate([target(PLATE), extra]))),
         "2 bodies where 1 is asked")


def test_degenerate_and_non_manifold_faces_score_zero(grade: Grade) -> None:
    mesh = target(PLATE)
    slivers = np.stack([mesh.faces[:5, 0], mesh.faces[:5, 1], mesh.faces[:5, 0]], axis=1)
    degenerate = trimesh.Trimesh(mesh.vertices, np.vstack([mesh.faces, slivers]), process=False)
    zero(grade(PLATE, "s.ply", bytes(degenerate.export(file_type="ply"))), "not a valid volume")
    a, b = mesh.vertices[mesh.faces[0, 0]], mesh.vertices[mesh.faces[0, 1]]
    collinear = np.vstack([mesh.vertices, (a + b) / 2])
    thin = [[mesh.faces[0, 0], mesh.faces[0, 1], len(collinear) - 1]] * 2
    flat = trimesh.Trimesh(collinear, np.vstack([mesh.faces, thin]), process=False)
    zero(grade(PLATE, "s.ply", bytes(flat.export(file_type="ply"))), "not a valid volume")
    left = trimesh.creation.box(bounds=[[0, 0, 0], [50, 60, 8]])
    right = trimesh.creation.box(bounds=[[50, 60, 0], [100, 120, 8]])  # touches it along one edge
    both = trimesh.util.concatenate([left, right])
    both.merge_vertices()
    zero(grade(PLATE, "s.ply", bytes(both.export(file_type="ply"))), "not a valid volume")


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_nan_or_inf_vertices_score_zero(grade: Grade, value: float) -> None:
    mesh = target(PLATE)
    vertices = mesh.vertices.copy()
    vertices[3, 1] = value
    bad = trimesh.Trimesh(vertices, mesh.faces, process=False)
    zero(grade(PLATE, "s.ply", bytes(bad.export(file_type="ply"))), "NaN or infinite")


def test_ten_million_faces_are_refused_with_a_clear_error(grade: Grade) -> None:
    faces = 10_000_000
    obj = b"v 0 0 0\nv 1 0 0\nv 0 1 0\n" + b"f 1 2 3\n" * faces
    zero(grade(PLATE, "s.obj", obj), "over the")
    header = b"\0" * 80 + faces.to_bytes(4, "little")
    zero(grade(PLATE, "s.stl", header + b"\0" * 50 * 1000), f"announces {faces}")
    ply = (b"ply\nformat binary_little_endian 1.0\nelement vertex 3\nproperty float x\nproperty "
           b"float y\nproperty float z\nelement face %d\nproperty list uchar int vertex_indices\n"
           b"end_header\n" % faces) + b"\0" * 1000
    zero(grade(PLATE, "s.ply", ply), f"announces {faces}")


@pytest.mark.parametrize("name, data", [
    ("s.stl", b"\x89PNG\r\n\x1a\n" + b"\x00" * 500), ("s.obj", b"hello, grader\n"),
    ("s.glb", b"glTF" + b"\xff" * 300), ("s.off", b"OFF\n3 1 0\n0 0 0\n"), ("s.ply", b""),
    ("s.stl", b"solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 nope\nendloop\nendfacet\n"),
], ids=["png-as-stl", "text-as-obj", "garbage-glb", "short-off", "empty-ply", "bad-ascii-stl"])
def test_a_file_that_is_not_a_mesh_scores_zero(grade: Grade, name: str, data: bytes) -> None:
    result = grade(PLATE, name, data)
    assert (result.score, result.success, result.gate) == (0.0, False, False), result


def test_a_scene_with_overlapping_or_floating_parts_scores_zero(grade: Grade) -> None:
    task = TASKS / "scene-two-blocks-post" / "tests" / "parts"
    parts = {p.stem: trimesh.load(p, force="mesh") for p in task.glob("*.stl")}
    for index, part in enumerate(parts.values()):  # near the origin, overlapping (no shared vertex)
        part.apply_translation([0.37 * index, 0.53 * index, 0.0] - part.bounds[0])
    zero(grade("scene-two-blocks-post", "s.glb", bytes(
        trimesh.util.concatenate(list(parts.values())).export(file_type="glb"))), "overlap")
    shifted = [part.copy() for part in parts.values()]
    for index, part in enumerate(shifted):
        part.apply_translation([index * 100.0, 0, 3.0])
    zero(grade("scene-two-blocks-post", "s.glb", bytes(
        trimesh.util.concatenate(shifted).export(file_type="glb"))), "does not rest on the floor")


def test_read_as_data_only(grade: Grade) -> None:
    """An OBJ that names a material library elsewhere, and a GLB whose buffer points at a
    file: read as data, nothing outside the submission is opened (it simply has no such file)."""
    mesh = target(PLATE)
    obj = ("mtllib /etc/passwd\n" + mesh.export(file_type="obj")).encode()
    result = grade(PLATE, "s.obj", obj)
    assert result.success, result
    stream = io.BytesIO()
    stream.write(bytes(mesh.export(file_type="glb")))
    assert grade(PLATE, "s.glb", stream.getvalue()).success
