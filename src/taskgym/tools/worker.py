"""The env's end of an episode's warm worker (``inside/workerloop.py`` in the sandbox).

:meth:`WarmWorker.start` runs the domain's ``worker.py start`` at reset, before the agent acts,
takes the key the server left in the workspace and opens the two FIFOs it made beside it
(:meth:`~taskgym.sandbox.Session.open_fifo`), then deletes the three files: the channel is two
pipes that only the env and the server hold. :meth:`WarmWorker.call` writes a request line with
a fresh nonce and reads reply lines, both without blocking and without any process started in
the sandbox, and accepts only a well-formed reply the server signed for that very request.
Anything else (a reply to an earlier request, garbage, a server gone, nothing in time) is an
error reply, never an exception.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import secrets
import select
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from taskgym.core.tool import ToolResult
from taskgym.errors import SandboxError
from taskgym.sandbox import Session

__all__ = ["WarmWorker", "WorkerChannel", "WorkerReply", "image_result", "reply_result"]

KEY_BYTES = 32
REPLY_LIMIT = 1 << 16
MESSAGE_LIMIT = 1 << 20
"""Longest reply line read (the server's bound on a request line too)."""
PNG_LIMIT = 8 << 20
START_SECONDS = 30.0


class WorkerReply(BaseModel):
    """The shape of a worker's answer; anything else is not an answer."""

    model_config = ConfigDict(extra="forbid", strict=True)
    ok: bool
    text: str = Field(max_length=REPLY_LIMIT)
    png: str | None = Field(default=None, max_length=200)
    timing: dict[str, float] | None = None


class WorkerGone(Exception):
    """The server's end of the channel is closed: it is not running any more."""


class WorkerChannel:
    """The env's ends of the two pipes to the server in ``session``: ``requests`` (written) and
    ``replies`` (read), both non-blocking, closed by :meth:`close` or once the channel is dropped."""

    def __init__(self, session: Session, requests: int, replies: int) -> None:
        self.session = weakref.ref(session)
        self.requests, self.replies = requests, replies
        self._pending = b""
        self._closer = weakref.finalize(self, _close_fds, requests, replies)

    def close(self) -> None:
        self._closer()

    def send(self, line: bytes, deadline: float) -> bool:
        """Write the request ``line`` whole before ``deadline`` (monotonic), after a newline that
        ends whatever part of a line the pipe held (an earlier request cut short); what comes
        back meanwhile is dropped (answers to earlier requests). ``False`` when the pipe stayed
        full. Raises :class:`WorkerGone` when nothing reads it any more."""
        self._drop_answers()
        view = memoryview(b"\n" + line)
        while view:
            try:
                view = view[os.write(self.requests, view):]
            except BlockingIOError:
                poll = select.poll()
                poll.register(self.requests, select.POLLOUT)
                poll.register(self.replies, select.POLLIN)
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                poll.poll(left * 1000.0)
                self._drop_answers()  # a server blocked on a full replies pipe reads on after it
            except BrokenPipeError:
                raise WorkerGone from None
        return True

    def _drop_answers(self) -> None:
        """Read and drop what the replies pipe holds now."""
        self._pending = b""
        while True:
            try:
                chunk = os.read(self.replies, MESSAGE_LIMIT)
            except BlockingIOError:
                return
            if not chunk:
                raise WorkerGone

    def lines(self, deadline: float) -> Iterator[bytes]:
        """The reply lines as they come (without their newline), each cut at
        :data:`MESSAGE_LIMIT` bytes, until ``deadline``. Raises :class:`WorkerGone` at the end
        of the pipe (the server died)."""
        while True:
            end = self._pending.find(b"\n")
            if end >= 0:
                line, self._pending = self._pending[:end], self._pending[end + 1:]
                yield line
                continue
            if len(self._pending) > MESSAGE_LIMIT:  # no line this long is a reply: drop it
                yield self._pending[:MESSAGE_LIMIT]
                self._pending = b""
            try:
                chunk = os.read(self.replies, MESSAGE_LIMIT)
            except BlockingIOError:
                if not _wait(self.replies, select.POLLIN, deadline):
                    return
                continue
            if not chunk:
                raise WorkerGone
            self._pending += chunk


def _wait(fd: int, events: int, deadline: float) -> bool:
    """Whether ``fd`` became ready for ``events`` (or hung up) before ``deadline``."""
    poll = select.poll()
    poll.register(fd, events)
    left = deadline - time.monotonic()
    return left > 0 and bool(poll.poll(left * 1000.0))


def _close_fds(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError as exc:
            if exc.errno != errno.EBADF:
                raise


class WarmWorker:
    """The warm worker ``script`` (its path in the sandbox), whose server leaves its key in
    ``key_file`` (relative to /app) and its FIFOs beside it; ``gone`` is the observation once
    it is not running."""

    def __init__(self, script: str, key_file: str, gone: str, wait_seconds: float) -> None:
        self.script, self.key_file, self.gone = script, key_file, gone
        self.wait_seconds = wait_seconds
        """How long a request may wait beyond its own timeout (the server's first imports)."""
        self.key: bytes | None = None
        self.channel: WorkerChannel | None = None

    def start(self, session: Session) -> None:
        """Start the episode's server, take its key and open its FIFOs, before the agent acts."""
        self.key = None
        if self.channel is not None:
            self.channel.close()
            self.channel = None
        result = session.exec(f"python3 -I -B {self.script} start", timeout=START_SECONDS)
        files = [self.key_file, f"{self.key_file}.requests", f"{self.key_file}.replies"]
        try:
            if result.exit_code == 0:
                self._connect(session, *files)
        except (OSError, ValueError, SandboxError):  # no key or FIFOs: the worker is gone
            pass
        finally:
            session.exec("rm -f " + " ".join(f"/app/{name}" for name in files), timeout=START_SECONDS)

    def _connect(self, session: Session, key_file: str, requests_fifo: str, replies_fifo: str) -> None:
        key = session.read_file(key_file, limit=64)
        if len(key) != KEY_BYTES:
            return
        requests = session.open_fifo(requests_fifo, write=True)
        try:
            replies = session.open_fifo(replies_fifo, write=False)
        except BaseException:
            os.close(requests)
            raise
        self.key, self.channel = key, WorkerChannel(session, requests, replies)

    def call(self, session: Session, request: dict[str, Any], timeout: float,
             remaining: Callable[[], float]) -> dict[str, Any]:
        """The worker's reply to ``request`` (``ok``, ``text``, maybe ``png`` and ``timing``), or an
        error reply with ``channel_error`` set; only a reply the server signed for this very
        request counts. ``remaining()`` bounds the wait (the episode's time left)."""
        channel = self.channel
        if self.key is None or channel is None or channel.session() is not session:
            return {"ok": False, "text": self.gone, "channel_error": True}
        line = json.dumps({**request, "timeout": timeout, "nonce": secrets.token_hex(16)}, sort_keys=True)
        wait = max(1.0, min(timeout + self.wait_seconds, remaining()))
        deadline = time.monotonic() + wait
        try:
            if channel.send(line.encode() + b"\n", deadline):
                for answer in channel.lines(deadline):
                    reply = self._verified(line, answer)
                    if reply is not None:
                        return reply
                    # not signed for this request: an answer to one that timed out earlier
        except WorkerGone:
            channel.close()
            self.channel = None
            return {"ok": False, "text": self.gone, "channel_error": True}
        return {"ok": False, "text": f"the worker gave no answer in {wait:g} s (it is stopped or "
                                     "stuck; later calls may still work)", "channel_error": True}

    def _verified(self, request: str, answer: bytes) -> dict[str, Any] | None:
        """The reply in ``answer`` (``<mac> <json>``) if the mac covers ``request`` and that
        reply: itself when well formed, else an error reply; ``None`` for any other line."""
        assert self.key is not None
        mac, _, body = answer.partition(b" ")
        expected = hmac.new(self.key, request.encode() + b"\n" + body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(mac, expected.encode()):
            return None
        try:
            return WorkerReply.model_validate_json(body).model_dump(exclude_none=True)
        except ValueError as exc:
            return {"ok": False, "text": f"the worker's answer was malformed: {str(exc)[:500]}",
                    "channel_error": True}


def reply_result(reply: dict[str, Any], run: bool = False) -> ToolResult:
    """The observation of a worker's ``reply``: an error unless it is ``ok``, or for a ``run``
    (the agent's code), its ``ok`` and ``timing`` in the info and an error only when the worker
    could not be reached or trusted (the code failing is an ordinary observation)."""
    if run:
        return ToolResult(reply["text"], info={"ok": reply["ok"], "timing": reply.get("timing")},
                          error=reply["text"] if reply.get("channel_error") else None)
    return ToolResult(reply["text"], error=None if reply["ok"] else reply["text"])


def image_result(session: Session, reply: dict[str, Any]) -> ToolResult:
    """The observation of a render ``reply``: its text with the PNG it names in the workspace
    attached, or an error when there is none (or it is no PNG)."""
    if not reply["ok"] or "png" not in reply:
        return reply_result({**reply, "ok": False})
    try:
        image = session.read_file(reply["png"], limit=PNG_LIMIT)
        problem = None if image.startswith(b"\x89PNG") else "it is not a PNG image"
    except (OSError, ValueError) as exc:
        image, problem = b"", f"it could not be read ({exc})"
    if problem is not None:
        message = f"error: the render {reply['png']}: {problem}"
        return ToolResult(message, error=message)
    return ToolResult(reply["text"], images=(image,))
