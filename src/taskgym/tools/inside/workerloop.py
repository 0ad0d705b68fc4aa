"""The server of an episode's warm worker, shared by the domains' ``inside/worker.py``.

``start(state, key_file, handle, warm)`` (run by the env at reset, before the agent acts) makes
a non-dumpable server with a fresh 32-byte key, which it leaves in ``key_file`` for the env to
read, beside two FIFOs, ``<key_file>.requests`` and ``<key_file>.replies``, which the server
holds open for reading and writing (so it never sees an end of file, and a write never waits
for a reader). The env opens the FIFOs through its descriptor of the workspace and deletes the
three files at once, still before the agent acts: from then on the channel is two pipes only
the env and this server hold (the server's descriptors are out of the agent's reach, as it is
not dumpable), one JSON request a line in, one reply a line out, with no process started per
call. At its first request the server runs ``warm()`` (the heavy imports, done once and
inherited by every child). Each request is handled by ``handle(request)`` in a child forked
from the warm server, which zeroes the key and closes the channel first, and runs under
``request['timeout']`` seconds, ``request['memory_mb']`` of memory beyond what the warm
interpreter maps and :data:`FILE_BYTES` per file written: a run starts warm, and whatever it
patches or breaks dies with it. The child of the next request is forked as soon as a reply is
sent, while the agent thinks, and waits for that one request only. Every reply is
``<mac> <json>``, the mac HMAC-SHA256 under the key of the request line and the reply, so the
env trusts no answer the server did not give to that very request. Runs inside the agent's
sandbox, with the standard library only.
"""

from __future__ import annotations

import ctypes
import gc
import hmac
import json
import os
import resource
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

Handler = Callable[[dict[str, Any]], dict[str, Any]]
KEY_BYTES = 32
KEY = bytearray()
"""The server's key; zeroed in every child before it handles a request."""
MESSAGE_LIMIT = 1 << 20
"""Longest request line read; a longer one is answered as a bad request."""
FILE_BYTES = 64 << 20
TRACEBACK_CHARS = 3000
PR_SET_DUMPABLE = 4
REPLY_KEYS = {"ok", "text", "png", "timing"}


def start(state: str, key_file: str, handle: Handler, warm: Callable[[], None]) -> int:
    """Start the server with a fresh key; return once the key file and the FIFOs exist."""
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # its memory and descriptors stay its own
    with open("/dev/urandom", "rb", buffering=0) as random:
        KEY.extend(bytes(KEY_BYTES))
        random.readinto(KEY)  # straight into the bytearray: no other copy of the key
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        os.close(ready_r)
        os.setsid()
        os.makedirs(state, mode=0o700, exist_ok=True)
        log = os.open(f"{state}/worker.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        for fd in (1, 2):
            os.dup2(log, fd)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        channel = []
        for path in (f"{key_file}.requests", f"{key_file}.replies"):
            if os.path.lexists(path):
                os.unlink(path)
            os.mkfifo(path, 0o600)
            channel.append(os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC))
        key = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(key, KEY)
        os.close(key)
        os.write(ready_w, b"1")
        os.close(ready_w)
        serve(channel[0], channel[1], handle, warm)
        os._exit(0)
    os.close(ready_w)
    return 0 if os.read(ready_r, 1) == b"1" else 1


def serve(requests: int, replies: int, handle: Handler, warm: Callable[[], None]) -> None:
    """Answer each line read from ``requests`` with one signed line on ``replies``."""
    warmed = False
    child: Child | None = None
    channel = (requests, replies)
    with os.fdopen(requests, "rb") as lines:
        while True:
            line = lines.readline(MESSAGE_LIMIT + 1)
            if not line:  # cannot happen while the server holds the FIFO open for writing too
                return
            if not line.endswith(b"\n"):  # longer than the bound (the env never sends that)
                while line and not line.endswith(b"\n"):
                    line = lines.readline(MESSAGE_LIMIT)
                line = b""
            line = line.rstrip(b"\n")
            if not line:  # the env starts each request with a newline, ending any cut line
                continue
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("not a JSON object")
                if not warmed:
                    warm()
                    gc.freeze()  # what the imports made is never traversed by a child's collector:
                    warmed = True  # no copy-on-write of the pages it sits on
                current, child = child or Child(channel, handle), None  # each child serves once
                reply = well_formed(current.run(request))
            except Exception as exc:  # a bad request, or the imports failed: say so, keep serving
                reply = {"ok": False, "text": f"the worker could not handle the request: {exc}"}
            body = json.dumps(reply).encode()
            answer = hmac.digest(KEY, line + b"\n" + body, "sha256").hex().encode() + b" " + body + b"\n"
            view = memoryview(answer)
            while view:  # waits while the pipe is full (the env reads it at its next call)
                view = view[os.write(replies, view):]
            if child is None and warmed:
                try:
                    child = Child(channel, handle)
                except OSError:  # no process to spare now (the pids bound): fork at the next request
                    pass


def capture_output(path: str) -> None:
    """Send this process's stdout and stderr (descriptors 1 and 2) to the file ``path``,
    emptied first: what a user's run prints, read back by :func:`printed_output`."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)


def printed_output(path: str, chars: int) -> list[str]:
    """What the run printed into ``path`` (:func:`capture_output`) as a reply's ``output:``
    part, cut at ``chars`` characters; no part when it printed nothing."""
    sys.stdout.flush()
    sys.stderr.flush()
    with open(path, encoding="utf-8", errors="replace") as out:
        printed = out.read(chars + 1)
    if not printed:
        return []
    return ["output:\n" + printed[:chars] + ("\n[...]" if len(printed) > chars else "")]


def well_formed(reply: Any) -> dict[str, Any]:
    """``reply`` if it has the shape of an answer (``ok``, ``text``, optional ``png`` and
    ``timing``), else an error saying that the run's answer was malformed."""
    if (isinstance(reply, dict) and isinstance(reply.get("ok"), bool)
            and isinstance(reply.get("text"), str) and set(reply) <= REPLY_KEYS
            and isinstance(reply.get("png", ""), str) and isinstance(reply.get("timing", {}), dict)):
        return reply
    return {"ok": False, "text": "the run gave a malformed answer (did the code write to the "
                                 "worker's pipe?)"}


class Child:
    """A child forked from the warm server, waiting for the one request it will handle."""

    def __init__(self, channel: tuple[int, int], handle: Handler) -> None:
        request_r, self._request_w = os.pipe()
        self._reply_r, reply_w = os.pipe()
        try:
            self.pid = os.fork()
        except OSError:
            for fd in (request_r, self._request_w, self._reply_r, reply_w):
                os.close(fd)
            raise
        if self.pid == 0:
            KEY[:] = bytes(len(KEY))
            for fd in channel:
                os.close(fd)
            os.close(self._request_w)
            os.close(self._reply_r)
            os.setpgid(0, 0)
            _child(request_r, reply_w, handle)
        os.close(request_r)
        os.close(reply_w)

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        """``request`` handled by the child, killed (its whole group) after ``request['timeout']``
        seconds; an error reply says why it gave no answer."""
        timeout = float(request.get("timeout", 60))
        deadline = time.monotonic() + timeout
        try:
            with os.fdopen(self._request_w, "wb") as pipe:
                pipe.write(json.dumps(request).encode())
        except OSError:  # the child is gone (killed): its missing answer says so below
            pass
        chunks = []
        timed_out = False
        with os.fdopen(self._reply_r, "rb") as pipe:
            waiting = select.poll()
            waiting.register(pipe.fileno(), select.POLLIN)
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not waiting.poll(left * 1000):
                    timed_out = True
                    break
                chunk = os.read(pipe.fileno(), 65536)
                if not chunk:
                    break
                chunks.append(chunk)
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(self.pid, 0)
        if timed_out:
            return {"ok": False, "text": f"the request ran past {timeout:g} s and was stopped "
                                         "(an endless loop, or too heavy an operation?)"}
        try:
            reply: dict[str, Any] = json.loads(b"".join(chunks))
            return reply
        except ValueError:
            code = os.waitstatus_to_exitcode(status)
            cause = ("it was killed (out of memory?) or wrote over the worker's reply"
                     if code == -signal.SIGKILL else "it crashed or wrote over the worker's reply")
            if code == -signal.SIGXFSZ:
                cause = f"it wrote a file past {FILE_BYTES >> 20} MB"
            return {"ok": False, "text": f"the run ended without an answer: {cause} (exit status {code})"}


def _child(request_r: int, reply_w: int, handle: Handler) -> None:
    """Wait for the request, bound the child, handle it, write the reply and exit (never return)."""
    code = 1
    try:
        try:
            with os.fdopen(request_r, "rb") as pipe:
                request = json.loads(pipe.read())
            bound(int(request.get("memory_mb", 1024)))
            reply = handle(request)
            code = 0
        except BaseException:  # the child must always answer and exit
            reply = {"ok": False, "text": traceback.format_exc(limit=-3)[-TRACEBACK_CHARS:]}
        with os.fdopen(reply_w, "w") as pipe:
            pipe.write(json.dumps(reply))
    finally:
        os._exit(code)


def bound(megabytes: int) -> None:
    """Cap the address space at what the warm interpreter maps plus ``megabytes``, and each
    file written at :data:`FILE_BYTES`."""
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * resource.getpagesize()
    limit = mapped + (megabytes << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_BYTES, FILE_BYTES))


# -- what the domains' workers share ---------------------------------------------------
def user_traceback(exc: BaseException, filename: str) -> str:
    """The traceback of ``exc`` through the frames of ``filename`` (the agent's code) only, the
    worker's and the libraries' own frames dropped, then the exception line; at most a dozen
    frames."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == filename]
    if len(frames) > 12:
        frames = frames[:2] + frames[-10:]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.StackSummary.from_list(frames).format()
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines).strip()


def saved_render(folder: str, view: str, png: bytes, what: str) -> dict[str, Any]:
    """Save the ``view`` of ``what`` as ``<folder>/render-<view>.png`` (relative to the
    workspace, where the env reads it) and the reply that names it."""
    os.makedirs(folder, exist_ok=True)
    path = f"{folder}/render-{view}.png"
    with open(path, "wb") as image:
        image.write(png)
    return {"ok": True, "text": f"{view} view of {what} (image attached; also saved as {path})",
            "png": path}


def main(state: str, key_file: str, handle: Handler, warm: Callable[[], None]) -> None:
    """A domain worker's ``python3 worker.py start``: :func:`start`, or the usage."""
    if sys.argv[1:] != ["start"]:
        sys.exit("usage: worker.py start")
    sys.exit(start(state, key_file, handle, warm))
