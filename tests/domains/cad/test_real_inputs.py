"""What a real text-to-CAD benchmark (200 parts 0.4 to 1.5 mm across) showed: tolerances at
every scale, references that are not one solid, free placement that must fall smoothly."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import taskgym
from taskgym.core.task import load_task
from taskgym.domains.cad.settings import CadChecks
from taskgym.domains.cad.verifier import INSIDE_DIR, grade_code
from taskgym.errors import ConfigError
from taskgym.sandbox import Backend

FIXTURES = Path(__file__).parents[3] / "fixtures" / "cad"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, INSIDE_DIR / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(name, module)
    spec.loader.exec_module(module)
    return module


geometry = _load("geometry")
compare = _load("compare")


def settings(placement: str = "fixed") -> dict[str, Any]:
    checks = CadChecks()
    return {"placement": placement, "reference_kind": "py", "bbox_tol_mm": checks.bbox_tol_mm,
            "bbox_tol_rel": checks.bbox_tol_rel, "holes": None,
            "hole_diameter_tol_mm": checks.hole_diameter_tol_mm,
            "hole_diameter_tol_rel": checks.hole_diameter_tol_rel}


def tiny_part(scale: float) -> Any:
    code = (FIXTURES / "tiny-part" / "tests" / "reference.py").read_text()
    return geometry.shape_from_code(code, "reference.py").scale(scale)


@pytest.mark.parametrize("size_mm", [0.5, 5.0, 50.0, 500.0])
def test_a_part_one_percent_too_large_fails_at_every_size(size_mm: float) -> None:
    reference = tiny_part(size_mm / 0.5)
    exact = compare.evaluate(settings(), reference, reference)
    assert exact["iou"] == 1.0 and all(c["passed"] for c in exact["checks"].values()), exact
    larger = compare.evaluate(settings(), reference.scale(1.01), reference)
    assert larger["gate"] and not larger["checks"]["bbox"]["passed"], larger["checks"]
    assert not larger["checks"]["holes"]["passed"], larger["checks"]


def test_free_placement_falls_smoothly_when_a_feature_is_missing() -> None:
    """A missing tab moves the centre of mass; the part must not be misaligned for it."""
    bar = "result = cq.Workplane().box(1.0, 0.3, 0.1)\n"
    tab = ".union(cq.Workplane().box(0.1, 0.3, 0.3).translate((0.45, 0, 0.1)))\n"
    reference = geometry.shape_from_code("import cadquery as cq\n" + bar.rstrip() + tab, "r.py")
    part = geometry.shape_from_code("import cadquery as cq\n" + bar, "p.py")
    in_place = compare.overlap(part, reference)["iou"]
    found = compare.evaluate(settings("free"), part.translate((3, -2, 1)), reference)
    centroid = next(c["iou"] for c in found["overlap"]["candidates"]
                    if c["alignment"] == "centre of mass")
    assert centroid < in_place - 0.2  # re-centring alone misaligns the whole part
    assert found["iou"] >= in_place - 0.02, found["overlap"]


def test_details_carry_the_references_properties() -> None:
    reference = tiny_part(1.0)
    found = compare.evaluate(settings(), reference.scale(1.01), reference)
    assert found["reference_properties"]["size"] == pytest.approx([0.5, 0.3, 0.05])
    assert found["properties"]["size"] == pytest.approx([0.505, 0.303, 0.0505])


@pytest.fixture()
def multi_solid_task(tmp_path: Path) -> Path:
    """A reference made of two solids side by side (`.add()` where a union was meant)."""
    folder = tmp_path / "two-blocks"
    shutil.copytree(FIXTURES / "tiny-part", folder)
    (folder / "tests" / "reference.py").write_text(
        "import cadquery as cq\n\nresult = cq.Workplane().box(1, 1, 1).add(\n"
        "    cq.Workplane().box(1, 1, 1).translate((2, 0, 0)))\n")
    return folder


@pytest.mark.sandbox
def test_a_reference_of_several_solids_is_the_tasks_fault(multi_solid_task: Path,
                                                           backend: Backend) -> None:
    env = taskgym.make("cad-cadquery-v0", tasks=str(multi_solid_task), sandbox=backend)
    try:
        with pytest.raises(ConfigError, match="reference is at fault.*2 solids"):
            env.reset(seed=0)
    finally:
        env.close()
    task = load_task(multi_solid_task, "cad")
    result = grade_code(task, b"import cadquery as cq\nresult = cq.Workplane().box(1, 1, 1)\n",
                        backend)
    # the grader checks the reference in its own setup, before the part runs: no verdict
    assert (result.verdict, result.failure) == ("none", "reference"), result
    assert "reference is at fault" in result.details["reason"]


@pytest.mark.sandbox
def test_the_tiny_part_succeeds_and_one_percent_larger_fails(backend: Backend) -> None:
    task = load_task(FIXTURES / "tiny-part", "cad")
    code = (FIXTURES / "tiny-part" / "solution" / "solve.py").read_text()
    assert grade_code(task, code.encode(), backend).success
    larger = grade_code(task, (code + "result = result.val().scale(1.01)\n").encode(), backend)
    assert not larger.success and larger.components["check_bbox"] == 0.0, larger
    assert larger.score < 0.5, larger
