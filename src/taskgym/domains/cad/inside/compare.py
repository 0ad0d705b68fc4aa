"""Compare a gated part with the reference: volume overlap, placement, named checks.

Runs inside the grading sandbox, with its own unpatched CadQuery, on solids that passed
:func:`geometry.the_solid`. Every length is in millimetres.
"""

from __future__ import annotations

from typing import Any

import cadquery as cq
import geometry
import numpy as np
from OCP.BRepAlgoAPI import BRepAlgoAPI_Common
from OCP.TopTools import TopTools_ListOfShape

SLACK = 1e-6
"""Relative rounding of the kernel's volumes: an intersection up to this much larger than a
part is that part (identical parts, a mesh against the solid it was made from)."""
CROSS_CHECK_BELOW = 0.99
"""An exact IoU below this is checked against a quick sampled estimate: a boolean that
silently drops part of the intersection (seen with meshes) must not become the score."""
CHECK_SAMPLES = 1000
SAMPLES = 20_000
"""Points per part of the sampled overlap estimate used when the booleans fail (a standard
error near 0.003)."""
GRID = 24
"""Cells per side of the inside test's grid."""
ALIGN_SAMPLES = 1024
ALIGN_STEPS = 30
_RAY = np.array([1.0, 0.318309886, 0.271828183])
DIRECTION = _RAY / np.linalg.norm(_RAY)
"""The ray of the sampled inside test: along no axis, so it grazes no face of a machined part."""


# -- overlap ------------------------------------------------------------------------------
def overlap(a: cq.Shape, b: cq.Shape) -> dict[str, Any]:
    """IoU of solids ``a`` and ``b``: V(A ∩ B) from the kernel's intersection, over
    V(A ∪ B) = V(A) + V(B) - V(A ∩ B), every volume measured on the two solids alone.

    An intersection larger than either part, or (for an IoU below 0.99) one far from a
    quick sampled estimate, is a kernel failure, not a score: the intersection is retried
    with a fuzzy tolerance, then replaced by a sampled estimate that uses no boolean, and
    ``kernel_failure`` says what happened. The IoU never exceeds 1: the intersection is
    within both parts, so the union is at least as large.
    """
    va, vb = geometry.volume_of(a), geometry.volume_of(b)
    size = max(a.BoundingBox().DiagonalLength, b.BoundingBox().DiagonalLength)
    meshes = _Meshes(a, b)
    quick: dict[str, Any] | None = None
    notes = []
    for method, fuzz in (("exact", 0.0), ("fuzzy", size * 1e-6)):
        inter = _intersection(a, b, fuzz)
        problem = _out_of_bounds(va, vb, inter)
        if problem is None:
            assert inter is not None
            # within the kernel's rounding of either part: the intersection is a subset of both
            inter = min(max(inter, 0.0), va, vb)
            result = {"iou": inter / (va + vb - inter), "intersection": inter,
                      "union": va + vb - inter, "method": method}
            if result["iou"] < CROSS_CHECK_BELOW:
                quick = quick or sampled_overlap(meshes, va, vb, CHECK_SAMPLES)
                result["sampled_iou"] = quick["iou"]
                if abs(result["iou"] - quick["iou"]) > 0.02 + 5 * quick["standard_error"]:
                    problem = (f"IoU {result['iou']:.4f}, but sampling the parts gives "
                               f"{quick['iou']:.4f}")
        if problem is None:
            if notes:
                result["kernel_failure"] = "; ".join(notes) + f"; resolved by the {method} booleans"
            return _checked(result)
        notes.append(f"{method} booleans: {problem}")
    estimate = sampled_overlap(meshes, va, vb, SAMPLES)
    estimate["kernel_failure"] = "; ".join(notes) + "; the IoU is a sampled estimate"
    return _checked(estimate)


def _checked(result: dict[str, Any]) -> dict[str, Any]:
    assert 0.0 <= result["iou"] <= 1.0, result  # the intersection lies within the union
    return result


def _intersection(a: cq.Shape, b: cq.Shape, fuzz: float) -> float | None:
    arguments, tools = TopTools_ListOfShape(), TopTools_ListOfShape()
    arguments.Append(a.wrapped)
    tools.Append(b.wrapped)
    common = BRepAlgoAPI_Common()
    common.SetArguments(arguments)
    common.SetTools(tools)
    if fuzz > 0:
        common.SetFuzzyValue(fuzz)
    common.Build()
    return geometry.volume_of(cq.Shape.cast(common.Shape())) if common.IsDone() else None


def _out_of_bounds(va: float, vb: float, inter: float | None) -> str | None:
    if inter is None:
        return "the intersection failed"
    slack = SLACK * (va + vb)
    if not -slack <= inter <= min(va, vb) + slack:
        return f"an intersection of {inter:.6g} between parts of {va:.6g} and {vb:.6g}"
    return None


class _Meshes:
    """Both parts' tessellations, made once, for the ray-parity inside test."""

    def __init__(self, a: cq.Shape, b: cq.Shape) -> None:
        self.shapes = (a, b)
        self.triangles = tuple(_triangles(shape) for shape in (a, b))

    def inside(self, which: int, points: np.ndarray) -> np.ndarray:
        return _inside(self.triangles[which], points)

    def points_inside(self, which: int, count: int, seed: int) -> np.ndarray:
        box = self.shapes[which].BoundingBox()
        low = np.array([box.xmin, box.ymin, box.zmin])
        high = np.array([box.xmax, box.ymax, box.zmax])
        rng = np.random.default_rng(seed)
        found: list[np.ndarray] = []
        total = 0
        for _ in range(64):
            points = low + (high - low) * rng.random((count, 3))
            keep = points[self.inside(which, points)]
            found.append(keep)
            total += len(keep)
            if total >= count:
                break
        return np.concatenate(found)[:count]


def sampled_overlap(meshes: _Meshes, va: float, vb: float, count: int) -> dict[str, Any]:
    """IoU estimated from points uniform inside each part, tested against the other's
    tessellated surface by ray parity (no boolean operation)."""
    in_a, in_b = meshes.points_inside(0, count, 11), meshes.points_inside(1, count, 13)
    p = float(meshes.inside(1, in_a).mean()) if len(in_a) else 0.0  # V(A ∩ B) / V(A)
    q = float(meshes.inside(0, in_b).mean()) if len(in_b) else 0.0  # V(A ∩ B) / V(B)
    inter = min((p * va + q * vb) / 2, va, vb)
    return {"iou": inter / (va + vb - inter), "intersection": inter, "union": va + vb - inter,
            "method": "sampled", "samples": count,
            "standard_error": float(np.sqrt(max(p * (1 - p), q * (1 - q), 1 / count) / count))}


def _triangles(shape: cq.Shape) -> tuple[np.ndarray, ...]:
    """The tessellation turned so that :data:`DIRECTION` is +Z: each triangle's corners in
    the XY plane, and its plane's z = c0 + c1 x + c2 y (triangles seen edge-on dropped)."""
    vertices, triangles = geometry.mesh_of(shape)
    turned = vertices @ _TURN.T
    a, b, c = (turned[triangles[:, i]] for i in range(3))
    normal = np.cross(b - a, c - a)
    usable = np.abs(normal[:, 2]) > 1e-12 * np.abs(normal).sum(axis=1).clip(min=1e-300)
    a, b, c, normal = a[usable], b[usable], c[usable], normal[usable]
    c1, c2 = -normal[:, 0] / normal[:, 2], -normal[:, 1] / normal[:, 2]
    c0 = a[:, 2] - c1 * a[:, 0] - c2 * a[:, 1]
    return a[:, 0], a[:, 1], b[:, 0], b[:, 1], c[:, 0], c[:, 1], c0, c1, c2


def _inside(triangles: tuple[np.ndarray, ...], points: np.ndarray) -> np.ndarray:
    """Whether each point is inside the closed mesh: the parity of the crossings of a ray
    along :data:`DIRECTION` (2-D edge tests in the turned frame, on a grid of cells so that
    a point meets only the triangles over its cell)."""
    x0, y0, x1, y1, x2, y2, c0, c1, c2 = triangles
    turned = points @ _TURN.T
    inside = np.zeros(len(points), dtype=bool)
    low = np.minimum(np.minimum(x0, x1), x2), np.minimum(np.minimum(y0, y1), y2)
    high = np.maximum(np.maximum(x0, x1), x2), np.maximum(np.maximum(y0, y1), y2)
    xs = np.linspace(low[0].min(), high[0].max(), GRID + 1)
    ys = np.linspace(low[1].min(), high[1].max(), GRID + 1)
    cell_x = np.clip(np.searchsorted(xs, turned[:, 0]) - 1, 0, GRID - 1)
    cell_y = np.clip(np.searchsorted(ys, turned[:, 1]) - 1, 0, GRID - 1)
    for i in range(GRID):
        column = (low[0] <= xs[i + 1]) & (high[0] >= xs[i])
        in_column = cell_x == i
        for j in range(GRID):
            which = np.flatnonzero(in_column & (cell_y == j))
            if not len(which):
                continue
            near = np.flatnonzero(column & (low[1] <= ys[j + 1]) & (high[1] >= ys[j]))
            if not len(near):
                continue
            px, py, pz = (turned[which, k:k + 1] for k in range(3))
            a0, b0, a1, b1, a2, b2 = x0[near], y0[near], x1[near], y1[near], x2[near], y2[near]
            w0 = (a1 - a0) * (py - b0) - (b1 - b0) * (px - a0)
            w1 = (a2 - a1) * (py - b1) - (b2 - b1) * (px - a1)
            w2 = (a0 - a2) * (py - b2) - (b0 - b2) * (px - a2)
            within = ((w0 >= 0) & (w1 >= 0) & (w2 >= 0)) | ((w0 <= 0) & (w1 <= 0) & (w2 <= 0))
            above = c0[near] + c1[near] * px + c2[near] * py > pz
            inside[which] = (within & above).sum(axis=1) % 2 == 1
    return inside


def _turning(direction: np.ndarray) -> np.ndarray:
    """The rotation taking ``direction`` to +Z."""
    z = direction
    x = np.cross([0.0, 0.0, 1.0], z)
    x /= np.linalg.norm(x)
    return np.array([x, np.cross(z, x), z])


_TURN = _turning(DIRECTION)


# -- placement ----------------------------------------------------------------------------
def best_placement(part: cq.Shape, reference: cq.Shape) -> dict[str, Any]:
    """For free placement: the translation of ``part`` that overlaps ``reference`` most.

    Starts: centres of mass met, and the bounding boxes' centres, lowest and highest
    corners met; each refined by a trimmed point-to-point ICP (translation only) on surface
    samples. One missing feature moves the centre of mass, but leaves a corner or most of
    the surface where it was, so the score falls smoothly with the error. The two starts
    whose surfaces coincide best, and the centres of mass, are compared exactly; the
    largest IoU wins.
    """
    from scipy.spatial import cKDTree

    moving = geometry.surface_samples(part, ALIGN_SAMPLES, 5)
    fixed = geometry.surface_samples(reference, ALIGN_SAMPLES, 6)
    fixed_tree = cKDTree(fixed)
    size = reference.BoundingBox().DiagonalLength
    near = size * 0.01

    def coincidence(shift: np.ndarray) -> float:
        placed = moving + shift
        forward = fixed_tree.query(placed)[0]
        back = cKDTree(placed).query(fixed)[0]
        return float((forward <= near).mean() + (back <= near).mean()) / 2

    def refined(shift: np.ndarray) -> np.ndarray:
        shift = shift.copy()
        for _ in range(ALIGN_STEPS):
            placed = moving + shift
            d_forward, i_forward = fixed_tree.query(placed)
            d_back, i_back = cKDTree(placed).query(fixed)
            pulls = np.concatenate([fixed[i_forward] - placed, fixed - placed[i_back]])
            gaps = np.concatenate([d_forward, d_back])
            step = pulls[gaps <= np.quantile(gaps, 0.8)].mean(axis=0)
            shift += step
            if np.linalg.norm(step) < size * 1e-7:
                break
        return shift

    box_p, box_r = part.BoundingBox(), reference.BoundingBox()
    low_p, low_r = (np.array([b.xmin, b.ymin, b.zmin]) for b in (box_p, box_r))
    high_p, high_r = (np.array([b.xmax, b.ymax, b.zmax]) for b in (box_p, box_r))
    centroid = np.array(reference.centerOfMass(reference).toTuple()) - np.array(
        part.centerOfMass(part).toTuple())
    starts = {"centre of mass": centroid, "box centre": (low_r + high_r - low_p - high_p) / 2,
              "lowest corner": low_r - low_p, "highest corner": high_r - high_p}
    candidates = {**starts, **{f"{name} + icp": refined(shift) for name, shift in starts.items()}}
    ranked = sorted(candidates, key=lambda name: -coincidence(candidates[name]))
    best: dict[str, Any] | None = None
    tried: list[dict[str, Any]] = []
    for name in dict.fromkeys(["centre of mass", *ranked[:2]]):
        shift = candidates[name]
        if any(np.linalg.norm(shift - np.array(t["translation"])) < size * 1e-9 for t in tried):
            continue
        found = overlap(part.translate(cq.Vector(*shift)), reference)
        entry = {"alignment": name, "translation": shift.tolist(), **found}
        tried.append(entry)
        if best is None or found["iou"] > best["iou"]:
            best = entry
        if best["iou"] >= 1 - SLACK:  # nothing overlaps better than the whole part
            break
    assert best is not None
    best["candidates"] = [{"alignment": t["alignment"], "iou": t["iou"]} for t in tried]
    return best


# -- named checks -------------------------------------------------------------------------
def tolerance(absolute: float, relative: float, size: float) -> float:
    """The stricter of an absolute tolerance and one relative to ``size``."""
    return min(absolute, relative * size)


def bbox_check(size: list[float], expected: list[float], absolute: float,
               relative: float) -> dict[str, Any]:
    allowed = tolerance(absolute, relative, max(expected))
    gaps = [abs(a - b) for a, b in zip(size, expected, strict=True)]
    return {"passed": max(gaps) <= allowed, "size": size, "expected": expected,
            "tolerance_mm": allowed}


def hole_counts(found: list[dict[str, Any]], absolute: float, relative: float) -> list[list[float]]:
    """``[[diameter, count], ...]``, diameters within tolerance of one another merged."""
    counts: list[list[float]] = []
    for hole in found:
        for entry in counts:
            if abs(entry[0] - hole["diameter"]) <= tolerance(absolute, relative, entry[0]):
                entry[1] += 1
                break
        else:
            counts.append([hole["diameter"], 1])
    return counts


def same_holes(got: list[list[float]], expected: list[list[float]], absolute: float,
               relative: float) -> bool:
    unmatched = [list(e) for e in expected]
    for diameter, count in got:
        match = next((e for e in unmatched if e[1] == count
                      and abs(e[0] - diameter) <= tolerance(absolute, relative, e[0])), None)
        if match is None:
            return False
        unmatched.remove(match)
    return not unmatched


# -- the whole comparison -------------------------------------------------------------------
def reference_problem(reference: cq.Shape) -> str | None:
    """Why the reference cannot be graded against (the task is at fault), or ``None``."""
    problem = geometry.gate_problem(reference)
    return None if problem is None else _at_fault(problem)


def _at_fault(problem: str) -> str:
    return (f"the task's reference is at fault, not the submission: {problem} (fix the task's "
            "tests/reference.*; `taskgym task check <folder>` checks it)")


def evaluate(settings: dict[str, Any], part: cq.Shape, reference: cq.Shape) -> dict[str, Any]:
    """Gate, IoU, named checks and chamfer distance of ``part`` against ``reference``.

    ``settings``: ``placement``, ``reference_kind``, ``bbox_tol_mm``/``bbox_tol_rel`` and
    ``hole_diameter_tol_mm``/``hole_diameter_tol_rel`` (a ``None`` absolute tolerance turns
    the check off), ``holes`` (expected ``[[diameter, count], ...]`` or ``None``).
    """
    solid, problem = geometry.the_solid(part)
    props = geometry.properties(part, solid)
    record: dict[str, Any] = {"properties": props}
    ref_solid, fault = geometry.the_solid(reference)
    ref_props = geometry.properties(reference, ref_solid)
    record["reference_properties"] = ref_props
    if ref_solid is None:
        return {**record, "gate": False, "reason": _at_fault(str(fault)), "reference_fault": True}
    if solid is None:
        return {**record, "gate": False, "reason": problem}
    if settings["placement"] == "free":
        found = best_placement(solid, ref_solid)
        solid = solid.translate(cq.Vector(*found["translation"]))
    else:
        found = overlap(solid, ref_solid)
    record["iou"] = found.pop("iou")
    record["overlap"] = found
    record["chamfer_mm"] = geometry.chamfer_distance(solid, ref_solid)
    checks: dict[str, Any] = {}
    if settings.get("bbox_tol_mm") is not None:
        checks["bbox"] = bbox_check(props["size"], ref_props["size"], settings["bbox_tol_mm"],
                                    settings.get("bbox_tol_rel", 1.0))
    hole_abs = settings.get("hole_diameter_tol_mm")
    hole_rel = settings.get("hole_diameter_tol_rel", 1.0)
    expected = settings.get("holes")
    if hole_abs is not None and (expected is not None or settings["reference_kind"] != "stl"):
        if expected is None:
            expected = hole_counts(geometry.holes(ref_solid), hole_abs, hole_rel)
        got = hole_counts(geometry.holes(solid), hole_abs, hole_rel)
        checks["holes"] = {"passed": same_holes(got, expected, hole_abs, hole_rel), "found": got,
                           "expected": expected, "tolerance_mm": hole_abs,
                           "tolerance_rel": hole_rel}
    record["checks"] = checks
    record["gate"] = True
    return record
