"""The warm CadQuery worker of an episode: what its requests do.

``python3 -I -B worker.py start`` (run by the env at reset, before the agent acts) starts the
shared server (``/.taskgym-view/workerloop.py``: a non-dumpable process with a fresh key, left
in ``/app/.cad-key`` for the env, and signed replies), which imports CadQuery at its first
request and handles each request (run the code, render, measure) in a forked child with its
own time, memory and file-size bounds, so a run starts warm and can neither disturb the next
one nor learn the key. A server that is gone is not restarted (its key could not be handed
over safely once the agent has acted).
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

STATE = "/tmp/.taskgym-cad"
CURRENT = f"{STATE}/current.brep"
OUTPUT = f"{STATE}/output.txt"
KEY_FILE = "/app/.cad-key"
"""Where the server leaves its key for the env (which reads and deletes it at reset)."""
RENDERS = ".cad"
"""Render PNGs go here, relative to the workspace, where the env reads them."""
OUTPUT_CHARS = 2000


def warm() -> None:
    import geometry  # noqa: F401  (imported once, here, inherited warm by every child)
    import render  # noqa: F401


# -- requests ---------------------------------------------------------------------------
def handle(request: dict[str, Any]) -> dict[str, Any]:
    import geometry

    op = request["op"]
    if op == "run":
        return _run(request["path"])
    if not os.path.exists(CURRENT):
        return {"ok": False, "text": "there is no current shape yet: run_cadquery first"}
    shape = geometry.load_brep(CURRENT)
    if op == "render":
        import render
        import workerloop

        view = request["view"]
        return workerloop.saved_render(RENDERS, view, render.render_png(shape, view), "the current shape")
    if op == "measure":
        return {"ok": True, "text": measure(shape, request)}
    raise KeyError(f"unknown op {op!r}")


def _run(path: str) -> dict[str, Any]:
    import geometry
    import workerloop

    with open(path, encoding="utf-8", errors="replace") as source_file:
        source = source_file.read()
    workerloop.capture_output(OUTPUT)
    started = time.monotonic()
    try:
        shape = geometry.shape_from_code(source, os.path.abspath(path))
        error = None
    except geometry.PartError as exc:
        shape, error = None, str(exc)
    except BaseException as exc:  # the user's code failed: its traceback, its frames only
        shape = None
        error = workerloop.user_traceback(exc, os.path.abspath(path))
    built = time.monotonic()
    parts = workerloop.printed_output(OUTPUT, OUTPUT_CHARS)
    if shape is None:
        parts.append(f"error:\n{error}")
        return {"ok": False, "text": "\n".join(parts)}
    solid, problem = geometry.the_solid(shape)
    props = geometry.properties(shape, solid)
    geometry.save_brep(shape, CURRENT)
    parts.append(describe(props))
    parts.append(f"WARNING: {problem}" if problem else "ok: one valid closed solid")
    timing = {"user_code_sec": built - started, "inspect_sec": time.monotonic() - built}
    return {"ok": problem is None, "text": "\n".join(parts), "timing": timing}


def _xyz(values: list[float]) -> str:
    return "(" + ", ".join(f"{v:.3f}" for v in values) + ")"


def describe(props: dict[str, Any]) -> str:
    return "\n".join([
        f"solids: {props['solids']}  valid: {props['valid']}  closed: {props['closed']}",
        f"volume: {props['volume']:.3f} mm^3  surface area: {props['area']:.3f} mm^2",
        f"bounding box: min {_xyz(props['bbox_min'])} max {_xyz(props['bbox_max'])} "
        f"size {_xyz(props['size'])} mm",
        f"centre of mass: {_xyz(props['centre_of_mass'])}",
        f"faces: {props['faces']}  edges: {props['edges']}",
    ])


def measure(shape: Any, request: dict[str, Any]) -> str:
    import geometry

    query = request["query"]
    if query == "bbox":
        return describe(geometry.properties(shape))
    if query == "holes":
        found = geometry.holes(shape)
        if not found:
            return "no round holes (no concave cylinder closes a full turn)"
        lines = [f"{len(found)} round hole surfaces (a counterbore counts as a second diameter on "
                 "the same axis):"]
        for hole in found:
            lines.append(f"  diameter {hole['diameter']:.3f} mm, axis {_xyz(hole['axis'])} through "
                         f"{_xyz(hole['through_point'])}, depth {hole['depth']:.3f} mm")
        return "\n".join(lines)
    if query == "point":
        point = tuple(float(v) for v in request["point"])
        found = geometry.point_query(shape, point)
        return (f"point {_xyz(list(point))} is {found['state']}; nearest surface point "
                f"{_xyz(found['nearest'])} at {found['distance']:.4f} mm")
    if query == "distance":
        a, b = (tuple(float(v) for v in request[k]) for k in ("point", "point_b"))
        pa, pb = (geometry.point_query(shape, p)["nearest"] for p in (a, b))
        gap = sum((x - y) ** 2 for x, y in zip(pa, pb, strict=True)) ** 0.5
        return (f"nearest surface point to {_xyz(list(a))}: {_xyz(pa)}; to {_xyz(list(b))}: "
                f"{_xyz(pb)}; distance between them {gap:.4f} mm")
    if query == "faces":
        lines = []
        for index, face in enumerate(shape.Faces()[:60]):
            centre = face.Center().toTuple()
            extra = ""
            if face.geomType() == "PLANE":
                extra = f" normal {_xyz(list(face.normalAt(face.Center()).toTuple()))}"
            lines.append(f"  face {index}: {face.geomType().lower()}, area {face.Area():.3f} mm^2, "
                         f"centre {_xyz(list(centre))}{extra}")
        more = len(shape.Faces()) - 60
        return "\n".join(["faces:", *lines] + ([f"  ... {more} more"] if more > 0 else []))
    raise KeyError(f"unknown measure query {query!r}")


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.append("/.taskgym-view")
    import workerloop

    workerloop.main(STATE, KEY_FILE, handle, warm)
