"""The grader's end of the grading channel, shared by every in-sandbox grader.

The counterpart of ``workerloop.py`` for graders, and of the host's reader
(``taskgym.core.sandboxed_grader``): runs inside the grading sandbox with the standard library only
(the coding grader runs it under a task image's own ``python3``, 3.8 or later). The host mounts
this folder at ``/.taskgym-view``; a grader puts it on ``sys.path``, imports this module and takes
it off again before anything of the policy's is on the path.

:func:`open_channel` makes the process non-dumpable (no other process of the sandbox can read
its memory or descriptors), reads the nonce from ``TASKGYM_NONCE_FD``, takes the report
descriptor ``TASKGYM_REPORT_FD`` (made non-inheritable) and reads the task's secret from
``TASKGYM_SECRET_FD`` when the host sent one, closing each and removing the three variables
from the environment, so nothing the grader starts inherits them; then it reports ``begun``.
:func:`run` wraps a grader's body: the channel opened, any exception of the grader's own
reported (:meth:`Channel.failed`), and the process ended. A grader that forks a child to run the
policy's code before it reads anything secret calls :func:`drop_channel` in that child.

The secret is one descriptor of an unlinked file (never a path in any sandbox): one JSON line
``{"settings": {...}, "files": {"name": size, ...}}``, then each file's bytes in that order
(:class:`Secret`; the host packs it with ``taskgym.core.sandboxed_grader.grader_secret``).

Every record is one line ``<nonce> <JSON object>``, in one vocabulary:

- ``{"phase": "begun"}`` first (sent by :func:`open_channel`), once the nonce and the secret are
  read;
- ``{"fault": "dependency" | "reference" | "crash", "reason": text}``: the grader's own setup
  failed before it read anything of the policy's (:meth:`Channel.fault`); it ends the report;
- ``{"phase": "started"}`` (:meth:`Channel.started`) before the grader reads or runs anything the
  policy left; from here on a grade that ends is the policy's (graded);
- ``{"event": {...}}``: progress the host counts (the coding grader's tests), after ``started``;
- ``{"final": true, "gate": bool, "reason": text or null, ...}``: the result, last of all
  (:meth:`Channel.final`); the domain's own fields beside ``gate`` and ``reason``.

A failure of the grader's own code (:meth:`Channel.failed`) is reported by its type and place
(file, line and function of its last frames), never by its message, which may quote a hidden
value: a ``crash`` fault before ``started``, a final record with ``gate`` false and an ``error``
after it.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

NONCE_FD, REPORT_FD, SECRET_FD = "TASKGYM_NONCE_FD", "TASKGYM_REPORT_FD", "TASKGYM_SECRET_FD"
CHANNEL_FDS = (NONCE_FD, REPORT_FD, SECRET_FD)
FAULTS = ("dependency", "reference", "crash")
PR_SET_DUMPABLE = 4
NONCE_BYTES = 256
"""Most bytes read as the nonce (the host's is 32 hex digits)."""


def undumpable() -> None:
    """Make this process non-dumpable: processes of the same user (the policy's code run by the
    grade) can then neither read its memory through ``/proc`` nor attach to it."""
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def drop_channel() -> None:
    """Close the channel's descriptors unread and forget their variables (in a child forked to
    run the policy's code before the grader read anything secret)."""
    for name in CHANNEL_FDS:
        value = os.environ.pop(name, None)
        if value is not None:
            os.close(int(value))


def _read_to_end(fd: int, limit: int = -1) -> bytes:
    chunks = []
    left = limit
    while left != 0:
        chunk = os.read(fd, 1 << 20 if left < 0 else min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left = left - len(chunk) if left > 0 else left
    os.close(fd)
    return b"".join(chunks)


class Secret:
    """The task's hidden data for the grader: ``settings`` (a JSON object) and ``files``
    (name -> bytes)."""

    def __init__(self, settings: dict[str, Any], files: dict[str, bytes]) -> None:
        self.settings = settings
        self.files = files

    @classmethod
    def unpack(cls, data: bytes) -> Secret:
        """Read the packing described in the module's docstring."""
        header, _, body = data.partition(b"\n")
        head = json.loads(header)
        settings, sizes = head["settings"], head["files"]
        files, offset = {}, 0
        for name, size in sizes.items():
            files[name] = body[offset:offset + size]
            offset += size
        if offset != len(body):
            raise ValueError("the grader's secret does not match its header")
        return cls(settings, files)


class Channel:
    """The report channel: one method per kind of record. Nothing is sent after the record
    that ends the report (a fault or the final record)."""

    def __init__(self, nonce: str, report_fd: int) -> None:
        self.secret: Secret | None = None
        self.phase = ""
        self.ended = False
        """Whether the record that ends the report was sent."""
        self._nonce = nonce
        self._stream = os.fdopen(report_fd, "w", buffering=1)

    def _send(self, record: dict[str, Any]) -> None:
        if self.ended:
            raise RuntimeError("the grader's report already ended")
        self._stream.write(self._nonce + " " + json.dumps(record) + "\n")
        self._stream.flush()

    def begun(self) -> None:
        """The grader runs; nothing of the policy's is read before :meth:`started`."""
        self._send({"phase": "begun"})
        self.phase = "begun"

    def started(self) -> None:
        """The grader's own setup is done; from here on it reads or runs the policy's work."""
        self._send({"phase": "started"})
        self.phase = "started"

    def fault(self, kind: str, reason: str) -> None:
        """The grader's own setup failed (``dependency``, ``reference``, ``crash``): the task or
        the sandbox is at fault, not the policy. Ends the report."""
        if kind not in FAULTS:
            raise ValueError(f"a fault is one of {FAULTS}")
        self._send({"fault": kind, "reason": str(reason)})
        self.ended = True

    def event(self, **fields: Any) -> None:
        """A record of progress (after :meth:`started`), read by the domain's host side."""
        self._send({"event": fields})

    def final(self, gate: bool, reason: str | None = None, **fields: Any) -> None:
        """The result; ends the report. ``gate``: the work passed the grader's hard checks, so the
        other fields measure it; else ``reason`` says why not."""
        self._send({"final": True, "gate": bool(gate), "reason": reason, **fields})
        self.ended = True

    def failed(self, exc: BaseException) -> None:
        """Report the grader's own exception ``exc`` by its type and place only: a ``crash`` fault
        in the grader's setup, a final record with ``gate`` false after :meth:`started`."""
        error = failure(exc)
        said = f"{error['type']} at {', '.join(error['at']) or 'an unknown place'}"
        if self.phase != "started":
            self.fault("crash", f"the grader failed in its own setup ({said})")
        else:
            self.final(False, f"the work could not be graded ({said})", error=error)

    def close(self) -> None:
        """Close the report descriptor (the host reads its end of file)."""
        self._stream.close()


def failure(exc: BaseException, frames: int = 3) -> dict[str, Any]:
    """``exc``'s type and the last ``frames`` places it passed (``file:line in function``), with
    no message: a message may quote a hidden value."""
    places: list[str] = [f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}"
                         for f in traceback.extract_tb(exc.__traceback__)[-frames:]]
    return {"type": type(exc).__name__, "at": places}


def open_channel() -> Channel:
    """The grader's channel, ``begun`` reported: non-dumpable first, then the nonce, the report
    descriptor and the secret taken, their descriptors closed (the report's kept,
    non-inheritable) and their variables removed. A secret that does not unpack is a ``crash``
    fault (the host packed it: not the policy's doing), raised as :class:`SystemExit`."""
    undumpable()
    nonce = _read_to_end(int(os.environ.pop(NONCE_FD)), NONCE_BYTES).decode().strip()
    report_fd = int(os.environ.pop(REPORT_FD))
    os.set_inheritable(report_fd, False)
    secret_fd = os.environ.pop(SECRET_FD, None)
    packed = None if secret_fd is None else _read_to_end(int(secret_fd))
    channel = Channel(nonce, report_fd)
    channel.begun()
    if packed is not None:
        try:
            channel.secret = Secret.unpack(packed)
        except Exception as exc:
            channel.failed(exc)
            raise SystemExit(0) from exc
    return channel


def run(grade: Callable[[Channel], None]) -> None:
    """Run a grader's body ``grade`` on its channel (:func:`open_channel`): an exception out of
    it, or a return before the report ended, is reported (:meth:`Channel.failed`); then the
    output is flushed and the process exits at once (nothing of the policy's left in it runs
    at interpreter shutdown, and the grader skips tearing down heavy modules)."""
    try:
        channel = open_channel()
    except SystemExit:
        os._exit(0)
    try:
        grade(channel)
        if not channel.ended:
            raise RuntimeError("the grader returned without its result")
    except BaseException as exc:  # the grader's own failure, or the policy's code ending it
        if not channel.ended:
            channel.failed(exc)
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(0)
