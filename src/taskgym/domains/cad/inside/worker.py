"""The warm CadQuery worker of an episode, and the command that talks to it.

``python3 -I -B worker.py serve`` imports CadQuery once and serves requests on a unix socket
in /tmp; each request (run the code, render, measure) is handled in a forked child with its
own time and memory bounds, so a run starts warm and cannot disturb the next one.
``python3 -I -S worker.py call '<json>'`` sends one request (starting the server first if it
is not running) and prints the JSON reply. Runs inside the agent's sandbox.
"""

from __future__ import annotations

import json
import os
import resource
import select
import signal
import socket
import subprocess
import sys
import time
import traceback
from typing import Any

STATE = "/tmp/.taskgym-cad"
SOCKET = f"{STATE}/worker.sock"
CURRENT = f"{STATE}/current.brep"
OUTPUT = f"{STATE}/output.txt"
RENDERS = ".cad"
"""Render PNGs go here, relative to the workspace, where the env reads them."""
OUTPUT_CHARS = 2000
START_SECONDS = 180.0


# -- client -----------------------------------------------------------------------------
def call(request: str) -> int:
    deadline = time.monotonic() + START_SECONDS
    server: subprocess.Popen[bytes] | None = None
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(SOCKET)
                conn.sendall(request.encode() + b"\n")
                reply = b"".join(iter(lambda: conn.recv(65536), b""))
            sys.stdout.write(reply.decode())
            return 0
        except (FileNotFoundError, ConnectionRefusedError):
            if server is None:
                os.makedirs(STATE, exist_ok=True)
                with open(f"{STATE}/worker.log", "ab") as log:
                    server = subprocess.Popen(
                        [sys.executable, "-I", "-B", os.path.abspath(__file__), "serve"],
                        stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
            elif server.poll() is not None or time.monotonic() > deadline:
                with open(f"{STATE}/worker.log", errors="replace") as log:
                    tail = log.read()[-OUTPUT_CHARS:]
                print(json.dumps({"ok": False, "text": f"the CadQuery worker did not start:\n{tail}"}))
                return 1
            time.sleep(0.05)


# -- server -----------------------------------------------------------------------------
def serve() -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import geometry  # noqa: F401  (imported once here, inherited warm by every child)
    import render  # noqa: F401

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
                _answer(conn)
            except OSError:  # the client went away (its command timed out): serve the next one
                pass


def _answer(conn: socket.socket) -> None:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    try:
        reply = _in_child(json.loads(data))
    except (ValueError, KeyError) as exc:
        reply = {"ok": False, "text": f"bad request: {exc}"}
    conn.sendall(json.dumps(reply).encode())


def _in_child(request: dict[str, Any]) -> dict[str, Any]:
    """Handle ``request`` in a forked child, killed after ``request['timeout']`` seconds."""
    timeout = float(request.get("timeout", 60))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.setpgid(0, 0)
        code = 1
        try:
            _bound_memory(int(request.get("memory_mb", 1024)))
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
        return {"ok": False, "text": f"the code ran past {timeout:g} s and was stopped "
                                     "(an endless loop, or too heavy an operation?)"}
    try:
        reply: dict[str, Any] = json.loads(b"".join(chunks))
        return reply
    except ValueError:
        signal_number = -os.waitstatus_to_exitcode(status)
        cause = "it ran out of memory" if signal_number == signal.SIGKILL else "it crashed"
        return {"ok": False, "text": f"the run ended without an answer: {cause} "
                                     f"(exit status {os.waitstatus_to_exitcode(status)})"}


def _bound_memory(megabytes: int) -> None:
    """Cap the address space at what the warm interpreter maps plus ``megabytes``."""
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    limit = mapped + (megabytes << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


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

        view = request["view"]
        os.makedirs(RENDERS, exist_ok=True)
        path = f"{RENDERS}/render-{view}.png"
        with open(path, "wb") as image:
            image.write(render.render_png(shape, view))
        return {"ok": True, "text": f"{view} view of the current shape (image attached; also "
                                    f"saved as {path})", "png": path}
    if op == "measure":
        return {"ok": True, "text": measure(shape, request)}
    raise KeyError(f"unknown op {op!r}")


def _run(path: str) -> dict[str, Any]:
    import geometry

    with open(path, encoding="utf-8", errors="replace") as source_file:
        source = source_file.read()
    os.makedirs(STATE, exist_ok=True)
    with open(OUTPUT, "wb") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))
    started = time.monotonic()
    try:
        shape = geometry.shape_from_code(source, os.path.abspath(path))
        error = None
    except geometry.PartError as exc:
        shape, error = None, str(exc)
    except BaseException:  # the user's code failed: show its traceback, our frames dropped
        shape = None
        kind, value, tb = sys.exc_info()
        while tb is not None and tb.tb_frame.f_code.co_filename != os.path.abspath(path):
            tb = tb.tb_next
        error = "".join(traceback.format_exception(kind, value, tb)).strip()
        lines = error.splitlines()
        if len(lines) > 14:
            error = "\n".join(lines[:2] + ["  ..."] + lines[-11:])
    built = time.monotonic()
    sys.stdout.flush()
    sys.stderr.flush()
    with open(OUTPUT, encoding="utf-8", errors="replace") as out:
        printed = out.read(OUTPUT_CHARS + 1)
    parts = []
    if printed:
        parts.append("output:\n" + printed[:OUTPUT_CHARS] + ("\n[...]" if len(printed) > OUTPUT_CHARS
                                                             else ""))
    if shape is None:
        parts.append(f"error:\n{error}")
        return {"ok": False, "text": "\n".join(parts)}
    props = geometry.properties(shape)
    geometry.save_brep(shape, CURRENT)
    problem = geometry.gate_problem(shape)
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
    if sys.argv[1:2] == ["serve"]:
        serve()
    elif sys.argv[1:2] == ["call"] and len(sys.argv) == 3:
        sys.exit(call(sys.argv[2]))
    else:
        sys.exit("usage: worker.py serve | worker.py call '<json request>'")
