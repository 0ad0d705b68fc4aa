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


def build(code: str) -> object:
    return geometry.shape_from_code("import cadquery as cq\n" + code, "part.py")


def test_holes_count_bores_and_counterbores_but_not_fillets_or_slot_ends() -> None:
    part = build('result = (cq.Workplane().box(80, 60, 10).edges("|Z").fillet(5)\n'
                 '    .faces(">Z").workplane().rect(60, 40, forConstruction=True).vertices()\n'
                 '    .cboreHole(6.6, 11, 4).faces(">Z").workplane().slot2D(20, 6).cutThruAll())\n')
    assert geometry.hole_counts(geometry.holes(part), 0.05) == [[6.6, 4], [11.0, 4]]


def test_a_boss_is_not_a_hole() -> None:
    part = build("result = cq.Workplane().box(40, 40, 5).faces('>Z').workplane().circle(5).extrude(10)\n")
    assert geometry.holes(part) == []


def test_iou_is_exact_for_known_overlaps() -> None:
    a = build("result = cq.Workplane().box(10, 10, 10)\n")
    b = build("result = cq.Workplane().box(10, 10, 10).translate((5, 0, 0))\n")
    assert geometry.iou(a, a) == pytest.approx(1.0, abs=1e-9)
    assert geometry.iou(a, b) == pytest.approx(500 / 1500, abs=1e-9)


def test_the_gate_wants_one_valid_closed_solid() -> None:
    one = geometry.properties(build("result = cq.Workplane().box(1, 1, 1)\n"))
    two = geometry.properties(build(
        "result = cq.Workplane().box(1, 1, 1).union(cq.Workplane().box(1, 1, 1).translate((3, 0, 0)))\n"))
    face = geometry.properties(build("result = cq.Workplane().rect(2, 2).extrude(1).faces('>Z')\n"))
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
