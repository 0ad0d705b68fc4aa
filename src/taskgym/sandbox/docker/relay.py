"""Descriptors handed to a one-shot run in a container (:meth:`DockerBackend.run`): one the
command reads is copied into a file it opens under the same number; one it writes becomes a
FIFO that :class:`FifoRelay` drains into the host descriptor while the command runs."""

from __future__ import annotations

import contextlib
import os
import select
import stat
import threading
import time

from taskgym.sandbox.host.procs import SANDBOX_UID

__all__ = ["FifoRelay", "is_read_end", "read_available"]


class FifoRelay:
    """Copies what the container writes into a FIFO to a host fd, while it runs."""

    def __init__(self, path: str, host_fd: int) -> None:
        os.mkfifo(path, 0o600)
        os.chown(path, SANDBOX_UID, SANDBOX_UID)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        self.host_fd = host_fd
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._copy, daemon=True)
        self.thread.start()

    def _copy(self) -> None:
        poll = select.poll()
        poll.register(self.fd, select.POLLIN)
        while True:
            finishing = self.done.is_set()
            poll.poll(50)
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                chunk = b""
            if chunk:
                with contextlib.suppress(OSError):
                    os.write(self.host_fd, chunk)
            elif finishing:
                break
            else:
                time.sleep(0.005)  # no writer yet, or between writes
        os.close(self.fd)

    def finish(self) -> None:
        self.done.set()
        self.thread.join(timeout=10)


def is_read_end(fd: int) -> bool:
    """Whether the command reads ``fd``: open read-only, or a regular file open for both."""
    import fcntl

    mode = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE
    return mode == os.O_RDONLY or (mode == os.O_RDWR and stat.S_ISREG(os.fstat(fd).st_mode))


def read_available(fd: int) -> bytes:
    """What can be read from ``fd`` now, without waiting."""
    chunks = []
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    while poll.poll(0):
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)
