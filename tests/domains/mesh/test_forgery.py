"""The forgery classes of the mesh grader (docs/security.md, "Mesh forgeries"), several variants
of each, through the real grader on every backend: volumes that cancel between shells, a part
without its features, and what a grade may expand to or tell."""

from __future__ import annotations

import json
import shutil
import struct
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import trimesh

from taskgym.core.reward import FailureClass, RewardResult
from taskgym.core.task import load_task
from taskgym.domains.mesh.verifier import grade_file
from taskgym.paths import envs_dir
from taskgym.sandbox import Backend

pytestmark = [pytest.mark.sandbox, pytest.mark.hacks]

Grade = Callable[[str, str, bytes], RewardResult]
TASKS = envs_dir() / "mesh-trimesh-v0" / "tasks"
PLATE = "plate-four-holes"
HOLE_TASKS = ("plate-four-holes", "plate-two-holes-obj", "counterbore-block", "repair-plate-degenerate")
"""The hole tasks; a plain block of the first three scored IoU 0.976-0.979 and succeeded."""


def target(task_id: str) -> trimesh.Trimesh:
    path = next((TASKS / task_id / "tests").glob("target.*"))
    return trimesh.load(path, force="mesh")


def ply(mesh: trimesh.Trimesh) -> bytes:
    return bytes(mesh.export(file_type="ply"))


def refused(result: RewardResult, reason: str = "not a valid volume") -> None:
    assert (result.score, result.success, result.gate) == (0.0, False, False), result
    assert reason in result.details["reason"], result.details["reason"]
    assert result.verdict == "graded"


def joined(*meshes: trimesh.Trimesh) -> trimesh.Trimesh:
    """The meshes as one file's faces, coincident vertices merged (as the grader merges them)."""
    mesh = trimesh.util.concatenate(list(meshes))
    mesh.merge_vertices()
    return mesh


def inverted(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    return trimesh.Trimesh(mesh.vertices, mesh.faces[:, ::-1], process=False)


def cancelling_shell(body: trimesh.Trimesh, volume: float, corner: np.ndarray) -> trimesh.Trimesh:
    """An inside-out cube of ``volume`` whose lowest corner is ``corner``."""
    side = volume ** (1 / 3)
    return inverted(trimesh.creation.box(bounds=[corner, corner + side]))


# -- class 1: shells whose volumes cancel -----------------------------------------------------
def shell_forgeries() -> dict[str, trimesh.Trimesh]:
    """Each a mesh whose signed volume is the plate's own, or near it, and is not one solid."""
    plate = target(PLATE)
    low, high = plate.bounds
    huge = trimesh.creation.box(bounds=[low - 20, high + 20])  # swallows the plate
    excess = huge.volume - plate.volume
    at_vertex = cancelling_shell(huge, excess, high + 20)  # shares the box's top corner
    side = excess ** (1 / 3)
    edge_corner = np.array([high[0] + 20, low[1] - 20 - side, low[2] - 20])
    at_edge = inverted(trimesh.creation.box(bounds=[edge_corner, edge_corner + [side, side, side]]))
    disjoint = cancelling_shell(huge, excess, high + 500)
    inner = trimesh.creation.box(bounds=[low + [30, 20, 1], high - [30, 20, 1]])
    return {
        "inside-out shell touching at a vertex": joined(huge, at_vertex),
        "inside-out shell sharing an edge": joined(huge, at_edge),
        "inside-out shell apart": joined(huge, disjoint),
        "two solids": joined(plate, trimesh.creation.box(bounds=[high + 10, high + 11])),
        "nested outward shells": joined(plate, inner),
        "the whole mesh inside out": inverted(plate),
        "a cavity reaching out of its body": joined(plate, inverted(trimesh.creation.box(
            bounds=[low + [40, 20, 2], high + [0, -20, 10]]))),
        "one face flipped": trimesh.Trimesh(
            plate.vertices, np.vstack([plate.faces[:1, ::-1], plate.faces[1:]]), process=False),
    }


@pytest.mark.parametrize("variant", list(shell_forgeries()))
def test_shells_that_cancel_or_overlap_are_not_one_solid(grade: Grade, variant: str) -> None:
    refused(grade(PLATE, "s.ply", ply(shell_forgeries()[variant])), "")


def test_a_real_cavity_is_one_body_and_its_volume_is_the_solids(grade: Grade) -> None:
    """A body with a closed void inside (its shell facing into the void) is one valid solid,
    scored on the solid: the plate with a void inside scores below 1 and succeeds nowhere near
    (the void is a cavity the target lacks: a topology change)."""
    plate = target(PLATE)
    low, high = plate.bounds
    void = inverted(trimesh.creation.box(bounds=[low + [30, 20, 2], high - [30, 20, 2]]))
    result = grade(PLATE, "s.ply", ply(joined(plate, void)))
    assert result.gate and not result.success, result
    assert result.details["properties"]["cavities"] == 1 and result.details["properties"]["bodies"] == 1
    assert result.score == pytest.approx(1 - void.volume * -1 / plate.volume, abs=1e-4)


# -- class 2: a part without its features -----------------------------------------------------
@pytest.mark.parametrize("task_id", HOLE_TASKS)
def test_the_featureless_block_and_hull_of_a_hole_task_do_not_succeed(grade: Grade, task_id: str) -> None:
    part = target(task_id)
    for stand_in in (trimesh.creation.box(bounds=part.bounds), part.convex_hull):
        result = grade(task_id, "s.ply", ply(stand_in))
        assert not result.success, (task_id, result)


def plate_with_holes(centres: list[tuple[float, float]]) -> trimesh.Trimesh:
    block = trimesh.creation.box(bounds=[[0, 0, 0], [100, 60, 8]])
    cuts = [trimesh.creation.cylinder(radius=3.3, segment=[[x, y, -1], [x, y, 9]], sections=96)
            for x, y in centres]
    return trimesh.boolean.difference([block, *cuts], engine="manifold")


@pytest.mark.parametrize("centres", [
    [(10, 10), (90, 10), (10, 50), (90, 50)],  # the right plate: it must succeed
    [(10, 10), (90, 10), (10, 50)],  # one hole missing
    [(12, 10), (90, 10), (10, 50), (90, 50)],  # one hole 2 mm off
    [(20, 20), (80, 20), (20, 40), (80, 40)],  # every hole in the wrong place
    [(10, 10), (90, 10), (10, 50), (90, 50), (50, 30)],  # an extra hole
], ids=["right", "one-missing", "one-2mm-off", "all-misplaced", "one-extra"])
def test_a_plate_with_holes_missing_or_misplaced_does_not_succeed(
        grade: Grade, centres: list[tuple[float, float]]) -> None:
    result = grade(PLATE, "s.ply", ply(plate_with_holes(centres)))
    assert result.gate and result.success == (len(centres) == 4 and centres[0] == (10, 10)), result


# -- class 3: expansion before parsing, and what a failed grade tells ------------------------
def glb(nodes: list[dict[str, object]], count: int = 36) -> bytes:
    """A GLB of one unit box (its buffers real) that ``nodes`` place, its index accessor
    announcing ``count`` indices (36, the box's own). 40,000 placements parsed for 14 s into
    480,000 faces before a bound refused them."""
    box = trimesh.creation.box(extents=[1, 1, 1])
    points, indices = box.vertices.astype("<f4").tobytes(), box.faces.astype("<u4").tobytes()
    gltf = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": [0]}], "nodes": nodes,
            "meshes": [{"primitives": [{"attributes": {"POSITION": 0}, "indices": 1, "mode": 4}]}],
            "buffers": [{"byteLength": len(points + indices)}],
            "bufferViews": [{"buffer": 0, "byteLength": len(points)},
                            {"buffer": 0, "byteOffset": len(points), "byteLength": len(indices)}],
            "accessors": [{"bufferView": 0, "count": 8, "componentType": 5126, "type": "VEC3",
                           "min": [-0.5] * 3, "max": [0.5] * 3},
                          {"bufferView": 1, "count": count, "componentType": 5125, "type": "SCALAR"}]}
    text = json.dumps(gltf).encode()
    text += b" " * (-len(text) % 4)
    binary = points + indices
    return (struct.pack("<4sII", b"glTF", 2, 28 + len(text) + len(binary))
            + struct.pack("<I4s", len(text), b"JSON") + text
            + struct.pack("<I4s", len(binary), b"BIN\0") + binary)


def placements(count: int) -> list[dict[str, object]]:
    return [{"children": list(range(1, count + 1))}] + [{"mesh": 0, "translation": [2.0 * k, 0.0, 0.0]}
                                                         for k in range(count)]


@pytest.mark.parametrize("nodes, count, reason", [
    (placements(40_000), 36, "places meshes more than"),
    ([{"children": [1, 1]}, {"children": [2, 2]}, {"children": [3, 3]}] + [{"children": [4] * 256}]
     + [{"mesh": 0}], 36, "places meshes more than"),  # a tree of few nodes, many paths
    ([{"mesh": 0, "children": [0]}], 36, "cycle"),
    ([{"mesh": 0}], 30_000_000, "announces"),
], ids=["40k-instances", "shared-subtrees", "node-cycle", "huge-accessor"])
def test_a_gltf_that_expands_past_the_bounds_is_refused(grade: Grade, nodes: list[dict[str, object]],
                                                        count: int, reason: str) -> None:
    refused(grade(PLATE, "s.glb", glb(nodes, count)), reason)


def test_a_gltf_of_a_few_instances_still_grades() -> None:
    """Instancing itself is fine within the bound: ten boxes in a row are ten bodies."""
    from taskgym.domains.mesh.verifier import INSIDE_DIR

    sys.path.insert(0, str(INSIDE_DIR))
    import meshlib

    props = meshlib.properties(meshlib.load("s.glb", glb(placements(10))))
    assert (props["bodies"], props["faces"]) == (10, 120), props


def hidden_numbers(task_id: str) -> list[str]:
    volume = target(task_id).volume
    return [f"{volume:{spec}}" for spec in (".1f", ".2f", ".3f", ".4f", "g")] + [repr(volume)]


def test_failed_grades_tell_no_hidden_volume(grade: Grade) -> None:
    plate = target(PLATE)
    tries = [*shell_forgeries().values(), trimesh.creation.box(bounds=plate.bounds),
             plate_with_holes([(20, 20), (80, 20), (20, 40), (80, 40)])]
    for mesh in tries:  # what the grade says, less the submission's own properties
        details = grade(PLATE, "s.ply", ply(mesh)).details
        told = json.dumps({k: v for k, v in details.items() if k != "properties"}, default=str)
        assert not [n for n in hidden_numbers(PLATE) if n in told], told


def test_a_task_whose_target_is_broken_has_no_verdict(backend: Backend, tmp_path: Path) -> None:
    """A broken hidden target is the task's fault, never the policy's: no verdict, class
    ``reference``, whatever is submitted (before, a graded zero for the agent)."""
    task_dir = tmp_path / PLATE
    shutil.copytree(TASKS / PLATE, task_dir)
    plate = target(PLATE)
    (task_dir / "tests" / "target.stl").write_bytes(
        bytes(trimesh.Trimesh(plate.vertices, plate.faces[1:], process=False).export(file_type="stl")))
    task = load_task(task_dir, "mesh")
    result = grade_file(task, "s.ply", ply(plate), backend)
    assert (result.verdict, result.failure, result.score) == ("none", FailureClass.REFERENCE, 0.0), result
    assert "not a valid solid" in result.details["reason"]
