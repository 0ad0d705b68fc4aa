"""Geometry of one part: build it from code, describe it, compare it with a reference.

Runs inside the sandbox (the agent's worker and the grader), with the sandbox's CadQuery.
Every length is in millimetres.
"""

from __future__ import annotations

import math
import os
import tempfile
from typing import Any

import cadquery as cq
import numpy as np
from OCP.BRep import BRep_Tool
from OCP.BRepAdaptor import BRepAdaptor_Surface
from OCP.BRepBuilderAPI import BRepBuilderAPI_MakeSolid, BRepBuilderAPI_Sewing
from OCP.BRepCheck import BRepCheck_Analyzer
from OCP.BRepClass3d import BRepClass3d, BRepClass3d_SolidClassifier
from OCP.BRepExtrema import BRepExtrema_DistShapeShape
from OCP.BRepGProp import BRepGProp
from OCP.BRepTools import BRepTools
from OCP.gp import gp_Pnt
from OCP.GProp import GProp_GProps
from OCP.StlAPI import StlAPI_Reader
from OCP.TopAbs import (
    TopAbs_COMPOUND,
    TopAbs_COMPSOLID,
    TopAbs_EDGE,
    TopAbs_FACE,
    TopAbs_IN,
    TopAbs_ON,
    TopAbs_OUT,
    TopAbs_SHELL,
    TopAbs_SOLID,
    TopAbs_VERTEX,
    TopAbs_WIRE,
)
from OCP.TopExp import TopExp_Explorer
from OCP.TopoDS import TopoDS, TopoDS_Iterator, TopoDS_Shape

UNITS_MM = {"mm": 1.0, "cm": 10.0, "m": 1000.0, "in": 25.4}
"""Millimetres per unit a reference may be drawn in."""


class PartError(Exception):
    """The code ran but did not produce a part (no ``result``, wrong type)."""


# -- building ---------------------------------------------------------------------------
def shape_from_code(source: str, filename: str) -> cq.Shape:
    """Execute CadQuery ``source`` and return the part it assigns to ``result``.

    ``show_object(obj)`` also works; several shown objects make one compound.
    """
    shown: list[Any] = []
    namespace: dict[str, Any] = {
        "__name__": "__main__", "__file__": filename, "cq": cq,
        "show_object": lambda obj, *args, **kwargs: shown.append(obj),
    }
    exec(compile(source, filename, "exec"), namespace)
    found = namespace.get("result")
    objects = [found] if found is not None else shown
    if not objects:
        raise PartError("the code assigned nothing to `result` (and called no show_object); "
                        "end the script with `result = <your Workplane or Shape>`")
    shapes: list[cq.Shape] = []
    for obj in objects:
        shapes.extend(_shapes_of(obj))
    if not shapes:
        raise PartError("`result` holds no shape (an empty Workplane?)")
    return shapes[0] if len(shapes) == 1 else cq.Compound.makeCompound(shapes)


def _shapes_of(obj: Any) -> list[cq.Shape]:
    if isinstance(obj, cq.Workplane):
        return [v for v in obj.vals() if isinstance(v, cq.Shape)]
    if isinstance(obj, cq.Assembly):
        return [obj.toCompound()]
    if isinstance(obj, cq.Shape):
        return [obj]
    if isinstance(obj, TopoDS_Shape):
        return [cq.Shape.cast(obj)]
    raise PartError(f"`result` is a {type(obj).__name__}, not a CadQuery Workplane or Shape")


def save_brep(shape: cq.Shape, path: str) -> None:
    if not BRepTools.Write_s(shape.wrapped, path):
        raise OSError(f"could not write {path}")


def load_brep(path: str) -> cq.Shape:
    return cq.Shape.importBrep(path)


def load_reference(kind: str, data: bytes, units: str) -> cq.Shape:
    """The reference part from a CadQuery script, a STEP file or a closed STL mesh, in mm."""
    if kind == "py":
        shape = shape_from_code(data.decode(), "reference.py")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, f"reference.{kind}")
            with open(path, "wb") as handle:
                handle.write(data)
            shape = cq.importers.importStep(path).val() if kind == "step" else _mesh_solid(path)
    scale = UNITS_MM[units]
    return shape if scale == 1.0 else shape.scale(scale)


def _mesh_solid(path: str) -> cq.Shape:
    """A closed triangle mesh as an OpenCascade solid (its faces sewn into one shell)."""
    faces = TopoDS_Shape()
    if not StlAPI_Reader().Read(faces, path):
        raise ValueError("the STL reference could not be read")
    sewing = BRepBuilderAPI_Sewing(1e-6)
    sewing.Add(faces)
    sewing.Perform()
    explorer = TopExp_Explorer(sewing.SewedShape(), TopAbs_SHELL)
    maker = BRepBuilderAPI_MakeSolid()
    while explorer.More():
        maker.Add(TopoDS.Shell_s(explorer.Current()))
        explorer.Next()
    solid = cq.Shape.cast(maker.Solid())
    if solid.Volume() < 0:
        solid = cq.Shape.cast(solid.wrapped.Reversed())
    return solid


# -- describing -------------------------------------------------------------------------
def properties(shape: cq.Shape, solid: cq.Shape | None = None) -> dict[str, Any]:
    """What an engineer checks first: solids, validity, closure, volume, size, faces.

    Measured on ``solid``, the part's one solid if :func:`the_solid` found it, so nothing
    beside it (a stray shell, an inverted one) changes the volume; on the whole shape
    otherwise, for the description.
    """
    measured = solid if solid is not None else shape
    solids = shape.Solids()
    box = measured.BoundingBox()
    shells = [s for one in solids for s in one.Shells()]
    closed = bool(shells) and all(BRep_Tool.IsClosed_s(s.wrapped) for s in shells)
    volume = volume_of(measured)
    centre = measured.centerOfMass(measured) if volume > 0 else measured.Center()
    return {
        "solids": len(solids), "closed": closed,
        "valid": True if solid is not None else bool(shape.isValid()),  # the gate checked it
        "volume": volume, "area": measured.Area(),
        "bbox_min": [box.xmin, box.ymin, box.zmin], "bbox_max": [box.xmax, box.ymax, box.zmax],
        "size": [box.xlen, box.ylen, box.zlen], "centre_of_mass": list(centre.toTuple()),
        "faces": len(shape.Faces()), "edges": len(shape.Edges()),
    }


def the_solid(shape: cq.Shape) -> tuple[cq.Shape | None, str | None]:
    """The part's one solid, or why the part is not exactly one valid, closed, positively
    oriented solid with nothing beside it.

    Compounds (nested or not) are unwrapped; whatever they hold besides the one solid (a
    free shell, face, wire, edge or vertex, a second solid) fails. Inside the solid, the
    first shell must enclose positive volume and every other shell must be a void: inverted
    and inside the first one.
    """
    leaves = _leaves(shape.wrapped)
    solids = [leaf for leaf in leaves if leaf.ShapeType() == TopAbs_SOLID]
    others = sorted({_KIND.get(leaf.ShapeType(), "shape") for leaf in leaves} - {"solid"})
    if len(solids) != 1:
        return None, f"the part has {len(solids)} solids; exactly one is required (union them)"
    if others:
        return None, (f"the part holds {', '.join(others)} besides its solid; the result must be "
                      "the one solid alone")
    solid = cq.Shape.cast(solids[0])
    if not BRepCheck_Analyzer(solid.wrapped).IsValid():
        return None, "the solid is not valid (OpenCascade's checker rejects it)"
    shells = solid.Shells()
    if not shells or not all(BRep_Tool.IsClosed_s(s.wrapped) for s in shells):
        return None, "the solid is not closed"
    volume = volume_of(solid)
    if volume <= 0:
        return None, "the solid has no positive volume (inside out?)"
    outer = cq.Shape.cast(BRepClass3d.OuterShell_s(TopoDS.Solid_s(solid.wrapped)))
    outer_solid = cq.Shape.cast(BRepBuilderAPI_MakeSolid(TopoDS.Shell_s(outer.wrapped)).Solid())
    if volume_of(outer_solid) <= 0:
        return None, "the solid's outer shell is inside out"
    for shell in shells:
        if shell.wrapped.IsSame(outer.wrapped):
            continue
        void = cq.Shape.cast(BRepBuilderAPI_MakeSolid(TopoDS.Shell_s(shell.wrapped)).Solid())
        corner = shell.Vertices()[0].toTuple() if shell.Vertices() else (math.inf,) * 3
        inside = BRepClass3d_SolidClassifier(outer_solid.wrapped, gp_Pnt(*corner), 1e-7).State()
        if volume_of(void) >= 0 or inside == TopAbs_OUT:
            return None, "the solid has a second shell that is not a void inside the first"
    return solid, None


_KIND = {TopAbs_COMPSOLID: "a compsolid", TopAbs_SOLID: "solid", TopAbs_SHELL: "a free shell",
         TopAbs_FACE: "a free face", TopAbs_WIRE: "a free wire", TopAbs_EDGE: "a free edge",
         TopAbs_VERTEX: "a free vertex"}


def _leaves(shape: TopoDS_Shape) -> list[TopoDS_Shape]:
    """What ``shape`` holds once compounds are unwrapped (a compsolid is one leaf)."""
    if shape.ShapeType() != TopAbs_COMPOUND:
        return [shape]
    found = []
    children = TopoDS_Iterator(shape)
    while children.More():
        found.extend(_leaves(children.Value()))
        children.Next()
    return found


def gate_problem(shape: cq.Shape) -> str | None:
    """Why ``shape`` is not exactly one valid closed solid, or ``None``."""
    return the_solid(shape)[1]


def volume_of(shape: cq.Shape) -> float:
    props = GProp_GProps()
    BRepGProp.VolumeProperties_s(shape.wrapped, props)
    return float(props.Mass())


def holes(shape: cq.Shape) -> list[dict[str, Any]]:
    """Round holes: concave cylindrical surfaces closing a full turn about one axis.

    Fillets and slot ends are concave cylinders too but cover less than a turn, so they
    are not holes. A counterbored hole gives two entries (bore and counterbore) on one axis.
    """
    groups: dict[tuple[float, ...], dict[str, Any]] = {}
    for face in shape.Faces():
        if face.geomType() != "CYLINDER":
            continue
        surface = BRepAdaptor_Surface(face.wrapped)
        cylinder = surface.Cylinder()
        axis = cylinder.Axis()
        direction = np.array(axis.Direction().Coord())
        direction = direction if _positive(direction) else -direction
        origin = np.array(axis.Location().Coord())
        root = origin - direction * float(origin @ direction)
        radius = cylinder.Radius()
        umin, umax, vmin, vmax = BRepTools.UVBounds_s(face.wrapped)
        point = np.array(surface.Value((umin + umax) / 2, (vmin + vmax) / 2).Coord())
        normal = np.array(face.normalAt(cq.Vector(*point)).toTuple())
        radial = point - origin - direction * float((point - origin) @ direction)
        if float(normal @ radial) >= 0:  # convex: a boss or shaft, not a hole
            continue
        key = (round(radius, 3), *np.round(direction, 4), *np.round(root, 3))
        group = groups.setdefault(key, {"diameter": 2 * radius, "axis": direction.tolist(),
                                        "through_point": root.tolist(), "turn": 0.0,
                                        "heights": []})
        group["turn"] += umax - umin
        heights = [float((np.array(v.toTuple()) - root) @ direction) for v in face.Vertices()]
        group["heights"].extend(heights)
    found = []
    for group in groups.values():
        if group["turn"] < 2 * math.pi - 1e-6:
            continue
        heights = group.pop("heights")
        group.pop("turn")
        group["depth"] = (max(heights) - min(heights)) if heights else 0.0
        found.append(group)
    found.sort(key=lambda h: (h["diameter"], h["through_point"]))
    return found


def _positive(direction: np.ndarray) -> bool:
    for value in direction:
        if abs(value) > 1e-9:
            return bool(value > 0)
    return True


def point_query(shape: cq.Shape, point: tuple[float, float, float]) -> dict[str, Any]:
    """Distance from ``point`` to the part's surface, and whether it lies inside."""
    vertex = cq.Vertex.makeVertex(*point)
    extrema = BRepExtrema_DistShapeShape(shape.wrapped, vertex.wrapped)
    distance = extrema.Value() if extrema.IsDone() else float("nan")
    nearest = extrema.PointOnShape1(1).Coord() if extrema.IsDone() else (math.nan,) * 3
    state = "outside"
    for solid in shape.Solids():
        classifier = BRepClass3d_SolidClassifier(solid.wrapped, gp_Pnt(*point), 1e-6)
        if classifier.State() == TopAbs_IN:
            state = "inside"
        elif classifier.State() == TopAbs_ON and state == "outside":
            state = "on the surface"
    return {"distance": distance, "nearest": list(nearest), "state": state}


# -- comparing --------------------------------------------------------------------------
def mesh_of(shape: cq.Shape) -> tuple[np.ndarray, np.ndarray]:
    """The tessellated surface: vertices (n x 3) and triangles (m x 3 vertex indices), with a
    chord error of a thousandth of the part's diagonal."""
    box = shape.BoundingBox()
    vertices, triangles = shape.tessellate(max(box.DiagonalLength * 1e-3, 1e-9), 0.3)
    return np.array([v.toTuple() for v in vertices]), np.array(triangles, dtype=np.int64)


def surface_samples(shape: cq.Shape, count: int, seed: int = 0) -> np.ndarray:
    """``count`` points spread uniformly by area over the tessellated surface."""
    pts, tri = mesh_of(shape)
    a, b, c = pts[tri[:, 0]], pts[tri[:, 1]], pts[tri[:, 2]]
    areas = np.linalg.norm(np.cross(b - a, c - a), axis=1) / 2
    rng = np.random.default_rng(seed)
    picks = rng.choice(len(tri), size=count, p=areas / areas.sum())
    r1, r2 = rng.random(count), rng.random(count)
    s = np.sqrt(r1)
    return a[picks] * (1 - s)[:, None] + b[picks] * (s * (1 - r2))[:, None] + c[picks] * (
        s * r2)[:, None]


def chamfer_distance(a: cq.Shape, b: cq.Shape, count: int = 4096) -> float:
    """Symmetric mean nearest-neighbour distance (mm) between surface samples: a diagnostic."""
    from scipy.spatial import cKDTree

    pa, pb = surface_samples(a, count, 1), surface_samples(b, count, 2)
    da, _ = cKDTree(pb).query(pa)
    db, _ = cKDTree(pa).query(pb)
    return float(da.mean() + db.mean()) / 2
