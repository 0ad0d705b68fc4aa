"""Reading, checking and comparing triangle meshes with trimesh and manifold3d.

Runs inside the sandbox (the agent's worker and the grader), with the sandbox's own
libraries. Every length is in millimetres. A mesh file is untrusted data: its size, the face
count its header announces and what a glTF scene expands to (instances of its meshes) are
bounded before parsing, the face count after, and every failure is a :class:`MeshError` with
a message for the agent.

A solid is what :func:`analyse` builds from the mesh: its shells are the components by faces
(edge adjacency, so two shells touching at a vertex are two shells, and a pinched vertex is
refused); every shell must be closed, edge- and vertex-manifold and consistently wound; a shell
oriented outward bounds a body, one oriented inward a cavity; bodies must not overlap nor nest,
cavities neither, and every cavity must lie inside the bodies (so the winding number is 0 or 1
everywhere: an inside-out shell outside every body, nested or overlapping bodies, a cavity
reaching out of its body are refused), checked with manifold3d booleans; the solid is the
bodies less the cavities. Every volume, IoU and count the grader uses is measured on that
solid, never on the mesh's signed volume.
"""

from __future__ import annotations

import io
import json
import os
from typing import Any

import manifold3d
import numpy as np
import trimesh

FORMATS = ("stl", "obj", "ply", "off", "glb")
MAX_BYTES = 48 << 20
"""Largest mesh file read (a 10k-face binary STL is 0.5 MB)."""
MAX_FACES = 1_000_000
MAX_INSTANCES = 1024
"""Most mesh placements a glTF scene may make (a mesh used by several nodes counts each time)."""
DEGENERATE = 1e-10
"""A face is degenerate when its area is at most this times its longest edge squared (a
property of the face alone, so the test means the same on a mesh of any size)."""


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
    elif kind == "glb":
        counts.append(_glb_faces(data, path))
    if any(c > MAX_FACES * 3 for c in counts):
        raise MeshError(f"{path} announces {max(counts)} elements, over the {MAX_FACES}-face bound")


def _glb_faces(data: bytes, path: str) -> int:
    """The triangles a binary glTF's scenes expand to (each node's mesh, once per path from a
    scene's root to it), from its JSON chunk alone; :class:`MeshError` past the bounds."""
    if len(data) < 20 or data[:4] != b"glTF" or data[16:20] != b"JSON":
        return 0  # not a GLB at all: the parser says so
    try:
        gltf = json.loads(data[20:20 + int.from_bytes(data[12:16], "little")])
        accessors, nodes = gltf.get("accessors", []), gltf.get("nodes", [])
        mesh_faces = [sum(int(accessors[p.get("indices", p["attributes"]["POSITION"])]["count"]) // 3
                          for p in m.get("primitives", [])) for m in gltf.get("meshes", [])]
        roots = [i for scene in gltf.get("scenes", []) for i in scene.get("nodes", [])]
        placed = faces = 0
        stack = [(i, 0) for i in (roots or range(len(nodes)))]
        while stack:
            index, depth = stack.pop()
            if depth > len(nodes):
                raise MeshError(f"{path}: its glTF node graph has a cycle")
            node = nodes[index]
            if "mesh" in node:
                placed, faces = placed + 1, faces + mesh_faces[node["mesh"]]
            if placed > MAX_INSTANCES:
                raise MeshError(f"{path}: its glTF scene places meshes more than {MAX_INSTANCES} "
                                "times; save the mesh as one body instead of instances")
            stack += [(child, depth + 1) for child in node.get("children", [])]
    except MeshError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as exc:
        raise MeshError(f"{path} is not a readable GLB mesh: malformed glTF ({type(exc).__name__})") from exc
    return faces * 3


def cleaned(mesh: trimesh.Trimesh) -> trimesh.Trimesh:
    """A copy with coincident vertices merged (STL stores none shared), nothing else changed."""
    copy = trimesh.Trimesh(mesh.vertices.copy(), mesh.faces.copy(), process=False)
    copy.merge_vertices(merge_tex=True, merge_norm=True)
    return copy


def properties(raw: trimesh.Trimesh) -> dict[str, Any]:
    """What ``inspect_mesh`` reports and the gate reads, from the mesh as loaded."""
    return analyse(raw)[0]


def analyse(raw: trimesh.Trimesh) -> tuple[dict[str, Any], manifold3d.Manifold | None]:
    """The mesh's properties and its solid (``None`` when it is not a valid one: then
    :func:`solid_problem` of the properties says why)."""
    finite = bool(np.isfinite(raw.vertices).all())
    props: dict[str, Any] = {"faces": len(raw.faces), "vertices_in_file": len(raw.vertices),
                             "finite": finite}
    if not finite:
        return props, None
    mesh = cleaned(raw)
    triangles = mesh.triangles
    longest = np.max([((triangles[:, i] - triangles[:, i - 1]) ** 2).sum(1) for i in range(3)], axis=0)
    sorted_faces = np.sort(mesh.faces, axis=1)
    _, edge_uses = np.unique(mesh.edges_sorted, axis=0, return_counts=True)
    props.update({
        "vertices": len(mesh.vertices),
        "watertight": bool(mesh.is_watertight),
        "winding_consistent": bool(mesh.is_winding_consistent),
        "euler_number": int(mesh.euler_number),
        "shells": len(trimesh.graph.connected_components(mesh.face_adjacency,
                                                         nodes=np.arange(len(mesh.faces)))),
        "volume": signed_volume(mesh),
        "area": float(mesh.area),
        "bounds": mesh.bounds.tolist(),
        "degenerate_faces": int((mesh.area_faces <= DEGENERATE * longest).sum()),
        "duplicate_faces": int(len(sorted_faces) - len(np.unique(sorted_faces, axis=0))),
        "boundary_edges": int((edge_uses == 1).sum()),
        "non_manifold_edges": int((edge_uses > 2).sum()),
    })
    if any(props[k] for k in ("boundary_edges", "non_manifold_edges", "degenerate_faces", "duplicate_faces")):
        return props, None
    props["pinched_vertices"] = pinched_vertices(mesh)
    if props["pinched_vertices"] or not props["winding_consistent"]:
        return props, None
    shells = mesh.split(only_watertight=False)
    signed = [signed_volume(shell) for shell in shells]
    props.update({"bodies": sum(v > 0 for v in signed), "cavities": sum(v < 0 for v in signed),
                  "genus": sum((2 - int(shell.euler_number)) // 2 for shell in shells),
                  "flat_shells": sum(v == 0 for v in signed)})
    if props["flat_shells"] or not props["bodies"]:
        return props, None
    oriented = [to_manifold(s if v > 0 else trimesh.Trimesh(s.vertices, s.faces[:, ::-1], process=False))
                for s, v in zip(shells, signed, strict=True)]
    bodies = union([m for m, v in zip(oriented, signed, strict=True) if v > 0])
    cavities = union([m for m, v in zip(oriented, signed, strict=True) if v < 0])
    solid = bodies - cavities if cavities is not None else bodies
    tolerance = 1e-6 * sum(map(abs, signed))
    # every point inside one body at most, one cavity at most, and a cavity only inside a body:
    # the winding number is 0 or 1 everywhere, and the solid is where it is 1
    props["shells_agree"] = bool(
        abs(bodies.volume() - sum(v for v in signed if v > 0)) <= tolerance
        and (cavities is None or (abs(cavities.volume() + sum(v for v in signed if v < 0)) <= tolerance
                                  and (cavities - bodies).volume() <= tolerance)))
    props["volume"] = float(solid.volume())
    return props, solid if props["shells_agree"] else None


def union(solids: list[manifold3d.Manifold]) -> manifold3d.Manifold | None:
    """The union of ``solids`` (``None`` for none)."""
    if len(solids) < 2:
        return solids[0] if solids else None
    return manifold3d.Manifold.batch_boolean(solids, manifold3d.OpType.Add)


def signed_volume(mesh: trimesh.Trimesh) -> float:
    """The volume the faces enclose, negative for an inside-out mesh (the divergence theorem:
    a sixth of the sum of each triangle's triple product)."""
    a, b, c = mesh.triangles.transpose(1, 0, 2)
    return float(np.einsum("ij,ij->", a, np.cross(b, c)) / 6)


def pinched_vertices(mesh: trimesh.Trimesh) -> int:
    """How many more fans of faces there are than vertices used: each corner of a face is
    joined to the corner of the same vertex across each edge at that vertex, and at a manifold
    vertex of a closed edge-manifold mesh all its corners form one fan (two shells sharing a
    vertex, or a shell pinched at one, give that vertex two)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    faces = mesh.faces
    pairs, shared = mesh.face_adjacency, mesh.face_adjacency_edges
    ends: tuple[list[np.ndarray], list[np.ndarray]] = ([], [])
    for k in (0, 1):
        vertex = shared[:, k][:, None]
        for side in (0, 1):
            ends[side].append(pairs[:, side] * 3 + (faces[pairs[:, side]] == vertex).argmax(1))
    a, b = np.concatenate(ends[0]), np.concatenate(ends[1])
    graph = coo_matrix((np.ones(len(a)), (a, b)), shape=(3 * len(faces), 3 * len(faces)))
    fans = connected_components(graph, directed=False)[0]
    return int(fans - len(np.unique(faces)))


def solid_problem(props: dict[str, Any]) -> str | None:
    """Why the mesh is not one valid solid (or several, for a multi-body task), or ``None``."""
    if not props["finite"]:
        return "some vertices are NaN or infinite"
    for key, what in (("boundary_edges", "open edges (holes)"),
                      ("non_manifold_edges", "non-manifold edges (more than two faces on an edge)"),
                      ("degenerate_faces", "degenerate (zero-area) faces"),
                      ("duplicate_faces", "duplicate faces"),
                      ("pinched_vertices", "non-manifold vertices (shells or parts of one touching at "
                                           "a single vertex)")):
        if props.get(key):
            return f"{props[key]} {what}"
    if not props["winding_consistent"]:
        return "the faces' winding is inconsistent (some normals are flipped)"
    if props.get("flat_shells"):
        return f"{props['flat_shells']} shells enclose no volume"
    if not props.get("bodies"):
        return "not a closed volume with outward normals (is the mesh inside out?)"
    if not props.get("shells_agree"):
        return ("its shells do not bound one solid: a shell is inside out outside every body, or "
                "bodies overlap or nest, or a cavity reaches out of its body (every shell must face "
                "outward from the material)")
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
    """Volume intersection over union of two solids, both from one manifold3d boolean: ``a``
    split by ``b`` into A & B and A - B; the union is B and A - B side by side, so it holds the
    intersection (A & B lies in B) and the IoU cannot exceed 1 (booleans that break that are an
    error, whose message carries no volume). The split costs what the intersection alone does;
    the union boolean besides cost six times that on equal meshes (0.28 s for 8,000 faces)."""
    common, only_a = a.split(b)
    inter, union = common.volume(), b.volume() + only_a.volume()
    if not (union > 0 and 0 <= inter <= union * (1 + 1e-9)):
        raise MeshError("the volume booleans of the mesh and the target disagree; is the mesh a clean solid?")
    return {"iou": min(inter / union, 1.0), "intersection": inter, "union": union}


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
