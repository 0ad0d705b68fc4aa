"""The warm trimesh worker of an episode, and the command that talks to it.

``python3 -I -B worker.py serve`` imports trimesh, manifold3d and the renderer once and
serves requests on a unix socket in /tmp; each request (run Python, inspect, render, measure)
is handled in a forked child with its own time, memory and file-size bounds, so a run starts
warm, and whatever it patches or breaks dies with the child. ``call.py`` is the client (it
starts this server when none is running). Runs inside the agent's sandbox.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import socket
import sys
import time
import traceback
from typing import Any

STATE = "/tmp/.taskgym-mesh"
SOCKET = f"{STATE}/worker.sock"
OUTPUT = f"{STATE}/output.txt"
RENDERS = ".mesh"
"""Render PNGs go here, relative to the workspace, where the env reads them."""
OUTPUT_CHARS = 3000
FILE_BYTES = 64 << 20


# -- server -----------------------------------------------------------------------------
def serve() -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.path.append("/.taskgym-view")
    import manifold3d  # noqa: F401  (imported once here, inherited warm by every child)
    import meshlib  # noqa: F401
    import meshview  # noqa: F401
    import scipy.spatial  # noqa: F401

    os.makedirs(STATE, exist_ok=True)
    if os.path.exists(SOCKET):
        os.unlink(SOCKET)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(SOCKET + ".new")
    os.rename(SOCKET + ".new", SOCKET)
    listener.listen(4)
    while True:
        conn, _ = listener.accept()
        with conn:
            try:
                data = b""
                while not data.endswith(b"\n"):
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                try:
                    reply = in_child(json.loads(data), (listener.fileno(), conn.fileno()))
                except (ValueError, KeyError, TypeError) as exc:
                    reply = {"ok": False, "text": f"bad request: {exc}"}
                conn.sendall(json.dumps(reply).encode())
            except OSError:  # the client went away (its command timed out): serve the next one
                pass


def in_child(request: dict[str, Any], server_fds: tuple[int, ...]) -> dict[str, Any]:
    """Handle ``request`` in a forked child (without the server's sockets), killed after
    ``request['timeout']`` seconds."""
    timeout = float(request["timeout"])
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        for fd in (read_end, *server_fds):
            os.close(fd)
        os.setpgid(0, 0)
        code = 1
        try:
            with open("/proc/self/statm") as statm:
                mapped = int(statm.read().split()[0]) * resource.getpagesize()
            limit = mapped + (int(request["memory_mb"]) << 20)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES))
            reply = handle(request)
            code = 0
        except BaseException:  # the child must always answer and exit
            reply = {"ok": False, "text": traceback.format_exc(limit=-3)[-OUTPUT_CHARS:]}
        with os.fdopen(write_end, "w") as pipe:
            pipe.write(json.dumps(reply))
        os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + timeout
    chunks = []
    timed_out = False
    with os.fdopen(read_end, "rb") as pipe:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([pipe], [], [], left)[0]:
                timed_out = True
                break
            chunk = os.read(pipe.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    _, status = os.waitpid(pid, 0)
    if timed_out:
        return {"ok": False, "text": f"the request ran past {timeout:g} s and was stopped "
                                     "(an endless loop, or too heavy an operation?)"}
    try:
        reply: dict[str, Any] = json.loads(b"".join(chunks))
        return reply
    except ValueError:
        code = os.waitstatus_to_exitcode(status)
        cause = ("it was killed (out of memory?) or wrote over the worker's reply" if code == -signal.SIGKILL
                 else "it crashed or wrote over the worker's reply")
        if code == -signal.SIGXFSZ:
            cause = f"it wrote a file past {FILE_BYTES >> 20} MB"
        return {"ok": False, "text": f"the run ended without an answer: {cause} (exit status {code})"}


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

    with open(path, encoding="utf-8", errors="replace") as source_file:
        source = source_file.read()
    with open(OUTPUT, "wb") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    namespace = {"__name__": "__main__", "__file__": path, "trimesh": trimesh, "np": numpy,
                 "numpy": numpy, "manifold3d": manifold3d}
    started = time.monotonic()
    try:
        exec(compile(source, path, "exec"), namespace)
        error = None
    except BaseException:  # the user's code failed: show its traceback, our frames dropped
        kind, value, tb = sys.exc_info()
        while tb is not None and tb.tb_frame.f_code.co_filename != path:
            tb = tb.tb_next
        lines = "".join(traceback.format_exception(kind, value, tb)).strip().splitlines()
        error = "\n".join(lines[:2] + ["  ..."] + lines[-11:] if len(lines) > 14 else lines)
    seconds = time.monotonic() - started
    sys.stdout.flush()
    sys.stderr.flush()
    with open(OUTPUT, encoding="utf-8", errors="replace") as out:
        printed = out.read(OUTPUT_CHARS + 1)
    parts = [f"output:\n{printed[:OUTPUT_CHARS]}" + ("\n[...]" if len(printed) > OUTPUT_CHARS else "")
             ] if printed else []
    parts.append(f"error:\n{error}" if error else f"ran in {seconds:.3f} s")
    return {"ok": error is None, "text": "\n".join(parts), "seconds": seconds}


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
        f"is_watertight: {props['watertight']}  is_winding_consistent: "
        f"{props['winding_consistent']}  is_volume: {props['is_volume']}",
        f"euler number: {props['euler_number']}  bodies: {props['bodies']}",
        f"volume: {props['volume']:.4f} mm^3  area: {props['area']:.4f} mm^2",
        f"bounds: min {_xyz(low)} max {_xyz(high)} "
        f"size {_xyz(b - a for a, b in zip(low, high, strict=True))}",
        f"degenerate faces: {props['degenerate_faces']}  duplicate faces: {props['duplicate_faces']}  "
        f"open edges: {props['boundary_edges']}  non-manifold edges: {props['non_manifold_edges']}",
        f"WARNING: {problem}" if problem else "ok: a clean closed volume",
    ])


def render(raw: Any, path: str, view: str) -> dict[str, Any]:
    import numpy as np

    if not np.isfinite(raw.vertices).all():
        return {"ok": False, "text": "error: the mesh has NaN or infinite vertices"}
    os.makedirs(RENDERS, exist_ok=True)
    png = f"{RENDERS}/render-{view}.png"
    with open(png, "wb") as image:
        image.write(render_png(raw, view, f"{os.path.basename(path)}: {view} view"))
    return {"ok": True, "text": f"{view} view of {path} (image attached; also saved as {png})",
            "png": png}


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
    if sys.argv[1:] != ["serve"]:
        sys.exit("usage: worker.py serve")
    serve()
