"""The warm CadQuery worker of an episode, and the command that talks to it.

``python3 -I -B worker.py start`` (run by the env at reset, before the agent acts) makes a
non-dumpable server with a fresh 32-byte key, which it leaves in ``/app/.cad-key`` for the
env to read (the env deletes it at once). The server imports CadQuery at its first request
and serves requests on a unix socket in /tmp; each request (run the code, render, measure)
is handled in a forked child with its own time and memory bounds, which forgets the key
first, so a run starts warm and can neither disturb the next one nor learn the key.
``python3 -I -S worker.py call '<json>'`` sends one request and prints ``TASKGYM-CAD <mac>
<reply json>``: the mac is HMAC-SHA256 under the key of the request and the reply, so the
env trusts no answer the server did not give to that very request. Runs inside the agent's
sandbox; a server that is gone is not restarted (its key could not be handed over safely
once the agent has acted).
"""

from __future__ import annotations

import ctypes
import hmac
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

STATE = "/tmp/.taskgym-cad"
SOCKET = f"{STATE}/worker.sock"
CURRENT = f"{STATE}/current.brep"
OUTPUT = f"{STATE}/output.txt"
KEY_FILE = "/app/.cad-key"
"""Where the server leaves its key for the env (which reads and deletes it at reset)."""
RENDERS = ".cad"
"""Render PNGs go here, relative to the workspace, where the env reads them."""
OUTPUT_CHARS = 2000
MESSAGE_LIMIT = 1 << 20
"""Longest request or reply on the socket."""
TAG = "TASKGYM-CAD"
REQUEST_SECONDS = 10.0
PR_SET_DUMPABLE = 4
KEY: bytearray = bytearray()
"""The server's key; zeroed in every child before it handles a request."""


# -- client -----------------------------------------------------------------------------
def call(request: str) -> int:
    """Send ``request`` to the server and print its tagged reply (whatever it was)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(SOCKET)
            conn.sendall(request.encode() + b"\n")
            reply = b""
            while len(reply) < MESSAGE_LIMIT and (chunk := conn.recv(65536)):
                reply += chunk
    except OSError as exc:
        print(f"{TAG}-GONE {exc}")
        return 1
    print(f"{TAG} {reply[:MESSAGE_LIMIT].decode(errors='replace')}")
    return 0


# -- server -----------------------------------------------------------------------------
def start() -> int:
    """Start the server with a fresh key; return once the key file and socket exist."""
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # its memory stays its own
    with open("/dev/urandom", "rb", buffering=0) as random:
        KEY.extend(bytes(32))
        random.readinto(KEY)  # straight into the bytearray: no other copy of the key
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        os.close(ready_r)
        os.setsid()
        os.makedirs(STATE, mode=0o700, exist_ok=True)
        log = os.open(f"{STATE}/worker.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        for fd in (1, 2):
            os.dup2(log, fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        key = os.open(KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(key, KEY)
        os.close(key)
        if os.path.exists(SOCKET):
            os.unlink(SOCKET)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(SOCKET)
        listener.listen(4)
        os.write(ready_w, b"1")
        os.close(ready_w)
        serve(listener)
        os._exit(0)
    os.close(ready_w)
    ready = os.read(ready_r, 1)
    return 0 if ready == b"1" else 1


def serve(listener: socket.socket) -> None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    while True:
        conn, _ = listener.accept()
        conn.settimeout(REQUEST_SECONDS)  # a client that sends nothing cannot hold the server
        with conn:
            try:
                _answer(conn, listener)
            except OSError:  # the client went away (its command timed out): serve the next one
                pass


def _answer(conn: socket.socket, listener: socket.socket) -> None:
    data = b""
    while not data.endswith(b"\n") and len(data) < MESSAGE_LIMIT:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    line = data.rstrip(b"\n")
    try:
        request = json.loads(line)
        if not isinstance(request, dict):
            raise ValueError("not a JSON object")
        import geometry  # noqa: F401  (imported once, here, inherited warm by every child)
        import render  # noqa: F401

        reply = well_formed(_in_child(request, (conn, listener)))
    except Exception as exc:  # a bad request, or CadQuery failed to import: say so, keep serving
        reply = {"ok": False, "text": f"the worker could not handle the request: {exc}"}
    body = json.dumps(reply).encode()
    mac = hmac.digest(KEY, line + b"\n" + body, "sha256").hex()
    conn.sendall(mac.encode() + b" " + body)


def well_formed(reply: Any) -> dict[str, Any]:
    """``reply`` if it has the shape of an answer (``ok``, ``text``, optional ``png`` and
    ``timing``), else an error saying that the run's answer was malformed."""
    if (isinstance(reply, dict) and isinstance(reply.get("ok"), bool)
            and isinstance(reply.get("text"), str) and set(reply) <= {"ok", "text", "png", "timing"}
            and isinstance(reply.get("png", ""), str)
            and isinstance(reply.get("timing", {}), dict)):
        return reply
    return {"ok": False, "text": "the run gave a malformed answer (did the code write to the "
                                 "worker's pipe?)"}


def _in_child(request: dict[str, Any], channels: tuple[socket.socket, ...]) -> dict[str, Any]:
    """Handle ``request`` in a forked child, killed after ``request['timeout']`` seconds.

    The child forgets the key and closes the server's sockets (``channels``) first."""
    timeout = float(request.get("timeout", 60))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        KEY[:] = bytes(len(KEY))
        for channel in channels:
            channel.close()
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
    except BaseException as exc:  # the user's code failed: its traceback, its frames only
        shape = None
        error = user_traceback(exc, os.path.abspath(path))
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
    solid, problem = geometry.the_solid(shape)
    props = geometry.properties(shape, solid)
    geometry.save_brep(shape, CURRENT)
    parts.append(describe(props))
    parts.append(f"WARNING: {problem}" if problem else "ok: one valid closed solid")
    timing = {"user_code_sec": built - started, "inspect_sec": time.monotonic() - built}
    return {"ok": problem is None, "text": "\n".join(parts), "timing": timing}


def user_traceback(exc: BaseException, filename: str) -> str:
    """The traceback of ``exc`` through the frames of ``filename`` only (the worker's and
    CadQuery's own frames dropped), then the exception line; at most a dozen frames."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    if len(frames) > 12:
        frames = frames[:2] + frames[-10:]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.StackSummary.from_list(frames).format()
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).strip()


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
    if sys.argv[1:2] == ["start"]:
        sys.exit(start())
    elif sys.argv[1:2] == ["call"] and len(sys.argv) == 3:
        sys.exit(call(sys.argv[2]))
    else:
        sys.exit("usage: worker.py start | worker.py call '<json request>'")
