"""Output as the agent sees it: decoded, with head and tail kept when it is too long, and the
bounded read of a one-shot run's output streams (:func:`drain`)."""

from __future__ import annotations

import os
import select
import time
from collections.abc import Callable

__all__ = ["decode_capped", "drain", "join_cut"]


def decode_capped(data: bytes | bytearray, cap: int) -> str:
    """Decode output, keeping the head and tail when it is longer than ``cap``."""
    if len(data) <= cap:
        return bytes(data).decode("utf-8", errors="replace")
    half = cap // 2
    return join_cut(bytes(data[:half]), len(data) - 2 * half, bytes(data[-half:]))


def join_cut(head: bytes, cut: int, tail: bytes) -> str:
    """``head`` and ``tail`` of an output with a note of the ``cut`` bytes between them."""
    return (head + f"\n[... {cut} bytes cut ...]\n".encode() + tail).decode("utf-8", errors="replace")


def drain(fds: list[int], deadline: float, limit: int,
           kill: Callable[[], None]) -> tuple[bytes, bytes, bool, bool]:
    """Read ``fds`` (stdout, stderr) to EOF, keeping ``limit`` bytes; ``kill`` at the deadline."""
    poll = select.poll()
    for fd in fds:
        poll.register(fd, select.POLLIN)
    bufs = {fd: bytearray() for fd in fds}
    open_fds = set(fds)
    timed_out = runaway = False
    while open_fds:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if timed_out:
                break  # killed 5 s ago and the pipes are still open: give up on them
            timed_out = True
            kill()
            deadline = time.monotonic() + 5.0
            continue
        for fd, _ev in poll.poll(remaining * 1000.0):
            chunk = os.read(fd, 262144)
            if not chunk:
                poll.unregister(fd)
                open_fds.discard(fd)
            elif len(bufs[fd]) < limit:
                bufs[fd] += chunk[: limit - len(bufs[fd])]
            elif not runaway:
                runaway = True
                kill()
    return bytes(bufs[fds[0]]), bytes(bufs[fds[1]]), timed_out, runaway
