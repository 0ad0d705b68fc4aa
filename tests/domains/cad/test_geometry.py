"""The geometry the grader relies on, run on the host: holes, IoU, gate, point queries."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from taskgym.domains.cad.verifier import INSIDE_DIR


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"taskgym_cad_inside_{name}", INSIDE_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


geometry = _load("geometry")
sys.modules["geometry"] = geometry  # compare imports it by that name, as in the sandbox
compare = _load("compare")


def build(code: str) -> object:
    return geometry.shape_from_code("import cadquery as cq\n" + code, "part.py")


def test_holes_count_bores_and_counterbores_but_not_fillets_or_slot_ends() -> None:
    part = build('result = (cq.Workplane().box(80, 60, 10).edges("|Z").fillet(5)\n'
                 '    .faces(">Z").workplane().rect(60, 40, forConstruction=True).vertices()\n'
                 '    .cboreHole(6.6, 11, 4).faces(">Z").workplane().slot2D(20, 6).cutThruAll())\n')
    assert compare.hole_counts(geometry.holes(part), 0.05, 0.005) == [[6.6, 4], [11.0, 4]]


def test_a_boss_is_not_a_hole() -> None:
    part = build("result = cq.Workplane().box(40, 40, 5).faces('>Z').workplane().circle(5).extrude(10)\n")
    assert geometry.holes(part) == []


def test_iou_is_exact_for_known_overlaps() -> None:
    a = build("result = cq.Workplane().box(10, 10, 10)\n")
    b = build("result = cq.Workplane().box(10, 10, 10).translate((5, 0, 0))\n")
    assert compare.overlap(a, a)["iou"] == 1.0
    found = compare.overlap(a, b)
    assert found["iou"] == pytest.approx(500 / 1500, abs=1e-9) and found["method"] == "exact"
    assert found["sampled_iou"] == pytest.approx(1 / 3, abs=0.05)  # the cross-check agrees


def test_the_sampled_estimate_agrees_with_the_booleans() -> None:
    a = build("result = cq.Workplane().box(10, 10, 10).faces('>Z').workplane().hole(4)\n")
    b = build("result = cq.Workplane().cylinder(12, 5).translate((3, 2, 1))\n")
    exact = compare.overlap(a, b)["iou"]
    meshes = compare._Meshes(a, b)
    estimate = compare.sampled_overlap(meshes, geometry.volume_of(a), geometry.volume_of(b), 4000)
    assert estimate["iou"] == pytest.approx(exact, abs=4 * estimate["standard_error"] + 0.005)


def test_a_silently_empty_intersection_is_a_kernel_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    a = build("result = cq.Workplane().box(10, 10, 10)\n")
    b = build("result = cq.Workplane().box(10, 10, 10).translate((1, 0, 0))\n")
    monkeypatch.setattr(compare, "_intersection", lambda *args: 0.0)  # what meshes did
    found = compare.overlap(a, b)
    assert found["method"] == "sampled" and "sampling the parts gives" in found["kernel_failure"]
    assert found["iou"] == pytest.approx(900 / 1100, abs=0.02)


def test_an_intersection_larger_than_a_part_is_a_kernel_failure(
        monkeypatch: pytest.MonkeyPatch) -> None:
    a = build("result = cq.Workplane().box(10, 10, 10)\n")
    monkeypatch.setattr(compare, "_intersection", lambda *args: 1500.0)
    found = compare.overlap(a, a)
    assert found["method"] == "sampled" and "an intersection of 1500" in found["kernel_failure"]
    assert 0.97 < found["iou"] <= 1.0


HACKS = {
    "inverted shell": "cq.Compound.makeCompound([box, cq.Shape.cast(far.Shells()[0].wrapped.Reversed())])",
    "free face": "cq.Compound.makeCompound([box, far.Faces()[0]])",
    "free wire": "cq.Compound.makeCompound([box, far.Wires()[0]])",
    "free edge": "cq.Compound.makeCompound([box, far.Edges()[0]])",
    "free vertex": "cq.Compound.makeCompound([box, far.Vertices()[0]])",
    "free shell": "cq.Compound.makeCompound([box, far.Shells()[0]])",
    "nested compounds": ("cq.Compound.makeCompound([cq.Compound.makeCompound([box]), cq.Compound."
                         "makeCompound([cq.Shape.cast(far.Shells()[0].wrapped.Reversed())])])"),
    "inverted solid": "cq.Shape.cast(box.wrapped.Reversed())",
    "two solids": "cq.Compound.makeCompound([box, far])",
}


@pytest.mark.parametrize("expression", HACKS.values(), ids=HACKS.keys())
def test_anything_beside_one_positive_solid_fails_the_gate(expression: str) -> None:
    part = build("box = cq.Workplane().box(10, 10, 10).val()\n"
                 "far = cq.Workplane().box(8, 8, 8).translate((100, 0, 0)).val()\n"
                 f"result = {expression}\n")
    assert geometry.gate_problem(part) is not None


def test_one_solid_passes_however_it_is_wrapped_and_voids_count() -> None:
    for code in ["result = cq.Workplane().box(10, 10, 10)\n",
                 "result = cq.Compound.makeCompound([cq.Compound.makeCompound(\n"
                 "    [cq.Workplane().box(10, 10, 10).val()])])\n",
                 "result = cq.Assembly().add(cq.Workplane().box(10, 10, 10))\n"]:
        assert geometry.gate_problem(build(code)) is None, code
    hollow = build("result = cq.Workplane().box(10, 10, 10).cut(cq.Workplane().box(4, 4, 4))\n")
    assert geometry.gate_problem(hollow) is None
    assert geometry.properties(hollow)["volume"] == pytest.approx(1000 - 64)


def test_the_gate_wants_one_valid_closed_solid() -> None:
    one = build("result = cq.Workplane().box(1, 1, 1)\n")
    two = build(
        "result = cq.Workplane().box(1, 1, 1).union(cq.Workplane().box(1, 1, 1).translate((3, 0, 0)))\n")
    face = build("result = cq.Workplane().rect(2, 2).extrude(1).faces('>Z')\n")
    assert geometry.gate_problem(one) is None
    assert "2 solids" in geometry.gate_problem(two)
    assert "0 solids" in geometry.gate_problem(face)


def test_code_without_result_says_what_to_do() -> None:
    with pytest.raises(geometry.PartError, match="result ="):
        build("part = cq.Workplane().box(1, 1, 1)\n")


def test_point_queries() -> None:
    cube = build("result = cq.Workplane().box(10, 10, 10)\n")
    assert geometry.point_query(cube, (0, 0, 0))["state"] == "inside"
    outside = geometry.point_query(cube, (0, 0, 8))
    assert outside["state"] == "outside" and outside["distance"] == pytest.approx(3.0)
