"""The env's end of an episode's warm worker (``inside/workerloop.py`` in the sandbox).

:meth:`WarmWorker.start` runs the domain's ``worker.py start`` at reset, before the agent acts,
and takes the key the server left in the workspace (deleting it); :meth:`WarmWorker.call` sends
a request with a fresh nonce through ``inside/workercall.py`` and accepts only a well-formed
reply the server signed for that very request. Anything else (a server the agent put in the
worker's place, garbage, nothing) is an error reply, never an exception.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import shlex
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from taskgym.core.tool import ToolResult
from taskgym.sandbox import Session
from taskgym.tools.view import VIEW_MOUNT

__all__ = ["WarmWorker", "WorkerReply", "image_result", "reply_result"]

KEY_BYTES = 32
REPLY_LIMIT = 1 << 16
PNG_LIMIT = 8 << 20
START_SECONDS = 30.0


class WorkerReply(BaseModel):
    """The shape of a worker's answer; anything else is not an answer."""

    model_config = ConfigDict(extra="forbid", strict=True)
    ok: bool
    text: str = Field(max_length=REPLY_LIMIT)
    png: str | None = Field(default=None, max_length=200)
    timing: dict[str, float] | None = None


class WarmWorker:
    """The warm worker ``script`` (its path in the sandbox), whose server listens on
    ``state``/worker.sock and leaves its key in ``key_file`` (relative to /app); ``tag``
    marks its replies and ``gone`` is the observation once it is not running."""

    def __init__(self, script: str, state: str, key_file: str, tag: str, gone: str,
                 wait_seconds: float) -> None:
        self.script, self.state, self.key_file, self.tag, self.gone = script, state, key_file, tag, gone
        self.wait_seconds = wait_seconds
        """How long a request may wait beyond its own timeout (the server's first imports)."""
        self.key: bytes | None = None

    def start(self, session: Session) -> None:
        """Start the episode's server and take its key, before the agent acts."""
        self.key = None
        result = session.exec(f"python3 -I -B {self.script} start", timeout=START_SECONDS)
        try:
            key = session.read_file(self.key_file, limit=64)
        except (OSError, ValueError):
            key = b""
        session.exec(f"rm -f /app/{self.key_file}", timeout=START_SECONDS)
        if result.exit_code == 0 and len(key) == KEY_BYTES:
            self.key = key

    def call(self, session: Session, request: dict[str, Any], timeout: float,
             remaining: Callable[[], float]) -> dict[str, Any]:
        """The worker's reply to ``request`` (``ok``, ``text``, maybe ``png`` and ``timing``), or an
        error reply with ``channel_error`` set; only a reply the server signed for this very
        request counts. ``remaining()`` bounds the wait (the episode's time left)."""
        if self.key is None:
            return {"ok": False, "text": self.gone, "channel_error": True}
        line = json.dumps({**request, "timeout": timeout, "nonce": secrets.token_hex(16)}, sort_keys=True)
        command = (f"python3 -I -S {VIEW_MOUNT}/workercall.py {self.state}/worker.sock {self.tag} "
                   f"{shlex.quote(line)}")
        result = session.exec(command, timeout=max(1.0, min(timeout + self.wait_seconds, remaining())))
        if f"{self.tag}-GONE " in result.stdout:
            return {"ok": False, "text": self.gone, "channel_error": True}
        for answer in result.stdout.splitlines():
            if answer.startswith(self.tag + " "):
                reply = self._verified(line, answer[len(self.tag) + 1:])
                if reply is not None:
                    return reply
        timed = " (timed out)" if result.timed_out else ""
        detail = (result.stdout + result.stderr)[-1500:]
        return {"ok": False, "text": f"the worker's answer could not be trusted (no reply signed by "
                                     f"this episode's worker for this request){timed}:\n{detail}",
                "channel_error": True}

    def _verified(self, request: str, answer: str) -> dict[str, Any] | None:
        """The reply in ``answer`` (``<mac> <json>``) if the mac covers ``request`` and that
        reply, and the reply is well formed; else ``None``."""
        assert self.key is not None
        mac, _, body = answer.partition(" ")
        expected = hmac.new(self.key, request.encode() + b"\n" + body.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(mac.encode(), expected.encode()):
            return None
        try:
            return WorkerReply.model_validate_json(body).model_dump(exclude_none=True)
        except ValueError:
            return None


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
