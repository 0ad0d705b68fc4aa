"""The warm trimesh worker of an episode: what its requests do.

``python3 -I -B worker.py start`` (run by the env at reset, before the agent acts) starts the
shared server (``/.taskgym-view/workerloop.py``: a non-dumpable process with a fresh key, left
in ``/app/.mesh-key`` for the env, and signed replies), which imports trimesh, manifold3d and
the renderer at its first request and handles each request (run Python, inspect, render,
measure) in a forked child with its own time, memory and file-size bounds, so a run starts
warm, and whatever it patches or breaks dies with the child. A server that is gone is not
restarted (its key could not be handed over safely once the agent has acted).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

STATE = "/tmp/.taskgym-mesh"
OUTPUT = f"{STATE}/output.txt"
KEY_FILE = "/app/.mesh-key"
"""Where the server leaves its key for the env (which reads and deletes it at reset)."""
RENDERS = ".mesh"
"""Render PNGs go here, relative to the workspace, where the env reads them."""
OUTPUT_CHARS = 3000


def warm() -> None:
    import manifold3d  # noqa: F401  (imported once, here, inherited warm by every child)
    import meshlib  # noqa: F401
    import meshview  # noqa: F401
    import scipy.spatial  # noqa: F401
    import trimesh  # noqa: F401


# -- requests ---------------------------------------------------------------------------
def handle(request: dict[str, Any]) -> dict[str, Any]:
    import meshlib

    op = request["op"]
    if op == "run":
        return run(request["path"])
    try:
        raw = meshlib.load(request["path"])
        if op == "inspect":
            return {"ok": True, "text": describe(meshlib.properties(raw))}
        if op == "render":
            return render(raw, request["path"], request["view"])
        if op == "measure":
            return {"ok": True, "text": measure(raw, request)}
    except meshlib.MeshError as exc:
        return {"ok": False, "text": f"error: {exc}"}
    raise KeyError(f"unknown op {op!r}")


def run(path: str) -> dict[str, Any]:
    import manifold3d
    import numpy
    import trimesh
    import workerloop

    with open(path, encoding="utf-8", errors="replace") as source_file:
        source = source_file.read()
    workerloop.capture_output(OUTPUT)
    namespace = {"__name__": "__main__", "__file__": path, "trimesh": trimesh, "np": numpy,
                 "numpy": numpy, "manifold3d": manifold3d}
    started = time.monotonic()
    try:
        exec(compile(source, path, "exec"), namespace)
        error = None
    except BaseException as exc:  # the user's code failed: its traceback, its frames only
        error = workerloop.user_traceback(exc, path)
    seconds = time.monotonic() - started
    parts = workerloop.printed_output(OUTPUT, OUTPUT_CHARS)
    parts.append(f"error:\n{error}" if error else f"ran in {seconds:.3f} s")
    return {"ok": error is None, "text": "\n".join(parts), "timing": {"user_code_sec": seconds}}


def _xyz(values: Any) -> str:
    return "(" + ", ".join(f"{float(v):.4f}" for v in values) + ")"


def describe(props: dict[str, Any]) -> str:
    import meshlib

    if not props["finite"]:
        return f"faces: {props['faces']}  vertices: {props['vertices_in_file']}\nNaN or infinite vertices"
    low, high = props["bounds"]
    problem = meshlib.solid_problem(props)
    return "\n".join([
        f"faces: {props['faces']}  vertices: {props['vertices']} (after merging coincident ones; "
        f"{props['vertices_in_file']} in the file)",
        f"is_watertight: {props['watertight']}  is_winding_consistent: {props['winding_consistent']}",
        f"euler number: {props['euler_number']}  shells (components by faces): {props['shells']}  "
        + (f"bodies: {props['bodies']}  cavities: {props['cavities']}  genus: {props['genus']}"
           if "bodies" in props else "bodies: not counted (not a valid solid)"),
        f"volume: {props['volume']:.4f} mm^3 "
        f"({'of the solid' if problem is None else 'signed, of the faces'})"
        f"  area: {props['area']:.4f} mm^2",
        f"bounds: min {_xyz(low)} max {_xyz(high)} "
        f"size {_xyz(b - a for a, b in zip(low, high, strict=True))}",
        f"degenerate faces: {props['degenerate_faces']}  duplicate faces: {props['duplicate_faces']}  "
        f"open edges: {props['boundary_edges']}  non-manifold edges: {props['non_manifold_edges']}"
        + (f"  non-manifold vertices: {props['pinched_vertices']}" if "pinched_vertices" in props else ""),
        f"WARNING: {problem}" if problem else "ok: a clean closed volume",
    ])


def render(raw: Any, path: str, view: str) -> dict[str, Any]:
    import numpy as np

    if not np.isfinite(raw.vertices).all():
        return {"ok": False, "text": "error: the mesh has NaN or infinite vertices"}
    import workerloop

    png = render_png(raw, view, f"{os.path.basename(path)}: {view} view")
    return workerloop.saved_render(RENDERS, view, png, path)


def render_png(raw: Any, view: str, title: str) -> bytes:
    """A shaded view of the mesh, its sharp edges (over 25 degrees) and open edges drawn dark."""
    import meshlib
    import meshview
    import numpy as np
    import trimesh

    mesh = meshlib.cleaned(raw)
    frame = meshview.rasterise(mesh.vertices, mesh.faces, view)
    sharp = mesh.face_adjacency_edges[mesh.face_adjacency_angles > np.radians(25)]
    open_edges = mesh.edges_sorted[trimesh.grouping.group_rows(mesh.edges_sorted, require_count=1)]
    for edges in (sharp, open_edges):
        meshview.draw_segments(frame, mesh.vertices[edges[:, 0]], mesh.vertices[edges[:, 1]])
    return meshview.to_png(frame, view, title)


def measure(raw: Any, request: dict[str, Any]) -> str:
    import meshlib
    import numpy as np

    mesh = meshlib.cleaned(raw)
    query = request["query"]
    if query == "signed_distance":
        points = np.array(request["points"], dtype=float).reshape(-1, 3)
        nearest, signed = meshlib.closest(mesh, points)
        return "\n".join(f"point {_xyz(p)}: signed distance {s:.4f} mm ({'inside' if s > 0 else 'outside'}"
                         f"), nearest surface point {_xyz(n)}"
                         for p, s, n in zip(points, signed, nearest, strict=True))
    if query == "section":
        found = meshlib.section(mesh, np.array(request["origin"], float), np.array(request["normal"], float))
        extent = found.get("extent_in_plane")
        return (f"section through {_xyz(request['origin'])} normal {_xyz(request['normal'])}: "
                f"area {found['area']:.4f} mm^2, {found['contours']} contours"
                + (f", extent in the plane {_xyz(extent)} mm" if extent else ""))
    if query == "distance":
        other = meshlib.cleaned(meshlib.load(request["other"]))
        found = meshlib.surface_distances(mesh, other, 5000)
        overlap = meshlib.iou(meshlib.to_manifold(mesh), meshlib.to_manifold(other))["intersection"]
        return (f"between {request['path']} and {request['other']}: chamfer {found['chamfer_mm']:.4f} mm, "
                f"Hausdorff {found['hausdorff_mm']:.4f} mm (sampled), intersection volume {overlap:.4f} "
                f"mm^3, smallest gap {found['gap_mm']:.4f} mm (sampled)")
    raise KeyError(f"unknown measure query {query!r}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.append("/.taskgym-view")
    import workerloop

    workerloop.main(STATE, KEY_FILE, handle, warm)
