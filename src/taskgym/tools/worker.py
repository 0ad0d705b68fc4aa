"""The host side of a warm worker in the sandbox that answers over a signed channel.

A domain whose tools need a slow-to-start interpreter (CadQuery, a geometry kernel) keeps one
server running inside the episode's sandbox. The sandbox belongs to the agent, so nothing it
prints is trusted unless the server signed it. The protocol the in-sandbox script implements
(CAD's ``inside/worker.py`` does):

* ``<script> start`` starts the server with a fresh key of :data:`KEY_BYTES` bytes, written to
  the workspace file ``key_file``; the host reads and deletes it at reset, before the agent acts.
* ``<script> call <request>`` passes one request (JSON, with a fresh ``nonce``) and prints the
  answer as ``<tag> <mac> <reply>``: ``mac`` is HMAC-SHA256 under the key of the request line,
  a newline and the reply, so a reply counts only for the very request it answers; it prints
  ``<tag>-GONE <why>`` when the server is gone (it is not restarted: its key could not be
  handed over safely once the agent acts).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from taskgym.errors import SandboxError
from taskgym.sandbox import Session

__all__ = ["KEY_BYTES", "REPLY_LIMIT", "SignedWorker", "WorkerReply"]

KEY_BYTES = 32
REPLY_LIMIT = 1 << 16


class WorkerReply(BaseModel):
    """The shape of a worker's answer; anything else is not an answer."""

    model_config = ConfigDict(extra="forbid", strict=True)
    ok: bool
    text: str = Field(max_length=REPLY_LIMIT)
    png: str | None = Field(default=None, max_length=200)
    """A PNG the worker wrote in the workspace, for the host to read."""
    timing: dict[str, float] | None = None


def verified(key: bytes, request: str, answer: str) -> dict[str, Any] | None:
    """The reply in ``answer`` (``<mac> <json>``) if the mac under ``key`` covers ``request``
    and that reply, and the reply is well formed; else ``None``."""
    mac, _, body = answer.partition(" ")
    expected = hmac.new(key, request.encode() + b"\n" + body.encode(), hashlib.sha256).hexdigest()
    if not hmac.compare_digest(mac.encode(), expected.encode()):
        return None
    try:
        return WorkerReply.model_validate_json(body).model_dump(exclude_none=True)
    except ValueError:
        return None


@dataclass
class SignedWorker:
    """One episode's worker: ``start`` at reset, then ``call`` from the tools."""

    script: str
    """The worker script's path inside the sandbox."""
    tag: str
    """What the script prints before each answer."""
    key_file: str
    """Where, relative to the workspace, the server leaves its key."""
    gone: str
    """The error text once the worker is not running."""
    what: str = "the worker"
    start_sec: float = 120.0
    """Time a call may take beyond its own timeout (the server's first start)."""
    key: bytes | None = None

    def start(self, session: Session) -> None:
        """Start the server and take its key (no key: every later call answers ``gone``)."""
        self.key = None
        result = session.exec(f"python3 -I -B {self.script} start", timeout=30)
        try:
            key = session.read_file(self.key_file, limit=64)
        except (SandboxError, OSError, ValueError):
            key = b""
        session.exec(f"rm -f {shlex.quote(session.spec.workdir + '/' + self.key_file)}",
                     timeout=30)
        if result.exit_code == 0 and len(key) == KEY_BYTES:
            self.key = key

    def call(self, session: Session, request: dict[str, Any], timeout: float,
             remaining: Callable[[], float]) -> dict[str, Any]:
        """The worker's reply to ``request``, or an error reply (``ok`` false, with
        ``channel_error``); never raises for anything the sandbox prints: only a reply the
        server signed for this very request counts. ``remaining()`` bounds the wait."""
        if self.key is None:
            return {"ok": False, "text": self.gone, "channel_error": True}
        line = json.dumps({**request, "nonce": secrets.token_hex(16)}, sort_keys=True)
        command = f"python3 -I -S {self.script} call {shlex.quote(line)}"
        limit = max(1.0, min(timeout + self.start_sec, remaining()))
        result = session.exec(command, timeout=limit)
        if f"{self.tag}-GONE " in result.stdout:
            return {"ok": False, "text": self.gone, "channel_error": True}
        for answer in result.stdout.splitlines():
            if answer.startswith(self.tag + " "):
                reply = verified(self.key, line, answer[len(self.tag) + 1:])
                if reply is not None:
                    return reply
        timed = " (timed out)" if result.timed_out else ""
        detail = (result.stdout + result.stderr)[-1500:]
        return {"ok": False, "text": f"{self.what}'s answer could not be trusted (no reply "
                                     f"signed by this episode's worker for this request){timed}:"
                                     f"\n{detail}", "channel_error": True}
