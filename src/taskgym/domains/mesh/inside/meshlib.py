"""Reading, checking and comparing triangle meshes with trimesh and manifold3d.

Runs inside the sandbox (the agent's worker and the grader), with the sandbox's own
libraries. Every length is in millimetres. A mesh file is untrusted data: its size and face
count are bounded before and after parsing, and every failure is a :class:`MeshError` with a
message for the agent.
"""

from __future__ import annotations

import io
import os
from typing import Any

import manifold3d
import numpy as np
import trimesh

FORMATS = ("stl", "obj", "ply", "off", "glb")
MAX_BYTES = 48 << 20
"""Largest mesh file read (a 10k-face binary STL is 0.5 MB)."""
MAX_FACES = 1_000_000


class MeshError(Exception):
    """The file is not a mesh this domain can read, or breaks a bound."""


def file_type(path: str) -> str:
    kind = os.path.splitext(path)[1].lower().lstrip(".")
    if kind not in FORMATS:
        raise MeshError(f"{path}: unknown mesh format {kind!r}; use one of .{', .'.join(FORMATS)}")
    return kind


def load(path: str, data: bytes | None = None) -> trimesh.Trimesh:
    """The mesh in ``path`` (or ``data``, typed by ``path``'s extension), vertices not merged."""
    kind = file_type(path)
    if data is None:
        try:
            size = os.path.getsize(path)
        except OSError as exc:
            raise MeshError(f"{path}: {exc.strerror}") from exc
        if size > MAX_BYTES:
            raise MeshError(f"{path} is {size} bytes, over the {MAX_BYTES}-byte bound")
        with open(path, "rb") as handle:
            data = handle.read()
    if len(data) > MAX_BYTES:
        raise MeshError(f"{path} is {len(data)} bytes, over the {MAX_BYTES}-byte bound")
    _check_header(kind, data, path)
    try:
        loaded = trimesh.load(io.BytesIO(data), file_type=kind, force="mesh", process=False)
    except MemoryError as exc:
        raise MeshError(f"{path} needs more memory than allowed to parse") from exc
    except Exception as exc:  # trimesh raises many kinds on bad input
        raise MeshError(f"{path} is not a readable {kind.upper()} mesh: "
                        f"{type(exc).__name__}: {str(exc)[:300]}") from exc
    if not isinstance(loaded, trimesh.Trimesh) or len(loaded.faces) == 0:
        raise MeshError(f"{path} holds no triangles")
    if len(loaded.faces) > MAX_FACES:
        raise MeshError(f"{path} has {len(loaded.faces)} faces, over the {MAX_FACES}-face bound")
    return loaded


def _check_header(kind: str, data: bytes, path: str) -> None:
    """Refuse counts announced past the face bound before a parser allocates for them."""
    counts: list[int] = []
    if kind == "stl" and not data[:5].lower().startswith(b"solid") and len(data) >= 84:
        counts.append(int.from_bytes(data[80:84], "little"))
    elif kind in ("ply", "off"):
        head = data[:4096].decode("latin-1")
        if kind == "ply":
            counts += [int(w[2]) for w in (line.split() for line in head.splitlines())
                       if len(w) == 3 and w[0] == "element" and w[2].isdigit()]
        else:
            words = head.split("\n", 2)[1:2] if head.startswith("OFF") else []
            counts += [int(w) for w in (words[0].split() if words else []) if w.isdigit()]
    if any(c > MAX_FACES * 3 for c in counts):
        raise MeshError(f"{path} announces {max(counts)} elements, over the {MAX_FACES}-face bound")


def cleaned(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    """A copy with coincident vertices merged (STL stores none shared), nothing else changed."""
    copy = trimesh.Trimesh(mesh.vertices.copy(), mesh.faces.copy(), process=False)
    copy.merge_vertices(merge_tex=True, merge_norm=True)
    return copy


def properties(raw: trimesh.Trimesh) -> dict[str, Any]:
    """What ``inspect_mesh`` reports and the gate reads, from the mesh as loaded."""
    finite = bool(np.isfinite(raw.vertices).all())
    props: dict[str, Any] = {"faces": len(raw.faces), "vertices_in_file": len(raw.vertices),
                             "finite": finite}
    if not finite:
        return props
    mesh = cleaned(raw)
    areas = mesh.area_faces
    scale = float(max(mesh.scale, 1e-9))
    sorted_faces = np.sort(mesh.faces, axis=1)
    edges = mesh.edges_sorted
    _, edge_uses = np.unique(edges, axis=0, return_counts=True)
    props.update({
        "vertices": len(mesh.vertices),
        "watertight": bool(mesh.is_watertight),
        "winding_consistent": bool(mesh.is_winding_consistent),
        "is_volume": bool(mesh.is_volume),
        "euler_number": int(mesh.euler_number),
        "bodies": int(mesh.body_count),
        "volume": float(mesh.volume),
        "area": float(mesh.area),
        "bounds": mesh.bounds.tolist(),
        "degenerate_faces": int((areas <= 1e-10 * scale * scale).sum()),
        "duplicate_faces": int(len(sorted_faces) - len(np.unique(sorted_faces, axis=0))),
        "boundary_edges": int((edge_uses == 1).sum()),
        "non_manifold_edges": int((edge_uses > 2).sum()),
    })
    return props


def solid_problem(props: dict[str, Any]) -> str | None:
    """Why the mesh is not a clean closed volume, or ``None``."""
    if not props["finite"]:
        return "some vertices are NaN or infinite"
    for key, what in (("boundary_edges", "open edges (holes)"),
                      ("non_manifold_edges", "non-manifold edges (more than two faces on an edge)"),
                      ("degenerate_faces", "degenerate (zero-area) faces"),
                      ("duplicate_faces", "duplicate faces")):
        if props[key]:
            return f"{props[key]} {what}"
    if not props["winding_consistent"]:
        return "the faces' winding is inconsistent (some normals are flipped)"
    if not (props["watertight"] and props["is_volume"]) or props["volume"] <= 0:
        return "not a closed volume with outward normals (is the mesh inside out?)"
    return None


def to_manifold(mesh: trimesh.Trimesh) -> manifold3d.Manifold:
    """``mesh`` as a manifold3d solid; :class:`MeshError` when manifold3d rejects it."""
    solid = manifold3d.Manifold(manifold3d.Mesh64(
        np.ascontiguousarray(mesh.vertices, dtype=np.float64),
        np.ascontiguousarray(mesh.faces, dtype=np.uint64)))
    status = solid.status()
    if status != manifold3d.Error.NoError:
        raise MeshError(f"manifold3d refuses the mesh as a solid: {status.name}")
    return solid


def iou(a: manifold3d.Manifold, b: manifold3d.Manifold) -> dict[str, float]:
    """Volume intersection over union in absolute units: the intersection from a manifold3d
    boolean, the union by inclusion-exclusion (V(A) + V(B) - V(A & B), the volume of the union
    boolean, at half the cost). Asserted, never clamped: the intersection is no larger than
    either solid (up to the booleans' rounding, 1e-9), so the IoU cannot exceed 1 past that."""
    va, vb = a.volume(), b.volume()
    inter = (a ^ b).volume()
    assert va > 0 and vb > 0 and -1e-9 * min(va, vb) <= inter <= min(va, vb) * (1 + 1e-9), (inter, va, vb)
    union = va + vb - inter
    return {"iou": inter / union, "intersection": inter, "union": union}


def surface_distances(a: trimesh.Trimesh, b: trimesh.Trimesh, count: int = 20000) -> dict[str, float]:
    """Chamfer and Hausdorff distances between the surfaces, from seeded surface samples
    (each sample's distance to the other mesh's samples and vertices: an upper bound of its
    distance to that surface, within the sample spacing)."""
    from scipy.spatial import cKDTree

    points = []
    for mesh in (a, b):
        samples, _ = trimesh.sample.sample_surface(mesh, count, seed=0)
        points.append(np.vstack([samples, mesh.vertices]))
    ab = cKDTree(points[1]).query(points[0])[0]
    ba = cKDTree(points[0]).query(points[1])[0]
    return {"chamfer_mm": float((ab.mean() + ba.mean()) / 2),
            "hausdorff_mm": float(max(ab.max(), ba.max())), "gap_mm": float(min(ab.min(), ba.min()))}


def closest(mesh: trimesh.Trimesh, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nearest surface point of each of ``points`` and its signed distance (positive inside),
    exactly: every triangle is tried, the sign is the winding number's."""
    tris = mesh.triangles
    nearest = np.empty_like(points)
    for i, point in enumerate(points):
        candidates = trimesh.triangles.closest_point(tris, np.repeat(point[None], len(tris), 0))
        nearest[i] = candidates[np.argmin(((candidates - point) ** 2).sum(1))]
    distance = np.linalg.norm(nearest - points, axis=1)
    return nearest, np.where(winding_number(mesh, points) > 0.5, distance, -distance)


def winding_number(mesh: trimesh.Trimesh, points: np.ndarray) -> np.ndarray:
    """Generalised winding number of each point (1 inside a closed outward mesh, 0 outside)."""
    out = np.empty(len(points))
    for i, point in enumerate(points):
        a, b, c = (mesh.triangles - point).transpose(1, 0, 2)
        la, lb, lc = (np.linalg.norm(v, axis=1) for v in (a, b, c))
        det = np.einsum("ij,ij->i", a, np.cross(b, c))
        div = (la * lb * lc + np.einsum("ij,ij->i", a, b) * lc + np.einsum("ij,ij->i", b, c) * la
               + np.einsum("ij,ij->i", c, a) * lb)
        out[i] = np.arctan2(det, div).sum() / (2 * np.pi)
    return out


def section(mesh: trimesh.Trimesh, origin: np.ndarray, normal: np.ndarray) -> dict[str, Any]:
    """The cross-section of ``mesh`` by a plane: area, contours and the loops' size."""
    to_plane = trimesh.geometry.plane_transform(origin, normal)
    moved = mesh.copy()
    moved.apply_transform(to_plane)
    cut = to_manifold(moved).slice(0.0)
    result: dict[str, Any] = {"area": float(cut.area()), "contours": int(cut.num_contour())}
    if cut.area() > 0:
        low_x, low_y, high_x, high_y = cut.bounds()
        result["extent_in_plane"] = [float(high_x - low_x), float(high_y - low_y)]
    return result
