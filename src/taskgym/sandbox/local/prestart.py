"""A pre-started local sandbox: bwrap around a command that holds one end of a socket pair."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from taskgym.sandbox.base import Prestarted, ResourceUsage, SandboxSpec
from taskgym.sandbox.host import fs
from taskgym.sandbox.host.os_errors import resource_error

if TYPE_CHECKING:
    from taskgym.sandbox.local.backend import LocalBackend
    from taskgym.sandbox.local.launch import Launched

__all__ = ["LocalPrestarted"]


class LocalPrestarted(Prestarted):
    """``argv`` in a new bubblewrap sandbox; its end of the channel is ``TASKGYM_WARM_FD``."""

    def __init__(self, backend: LocalBackend, spec: SandboxSpec, argv: list[str]) -> None:
        self.spec = spec
        self._made_by = os.getpid()
        try:
            host, inner = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except OSError as exc:
            raise resource_error("could not pre-start a sandbox", exc) from exc
        try:
            with_fd = spec.model_copy(update={"env": {**spec.env,
                                                      "TASKGYM_WARM_FD": str(inner.fileno())}})
            self._launched: Launched | None = backend.launch(
                with_fd, argv, [inner.fileno()], stdout=subprocess.DEVNULL)
        except BaseException:
            host.close()
            raise
        finally:
            inner.close()
        self.channel = host

    @property
    def alive(self) -> bool:
        return self._launched is not None and self._launched.proc.poll() is None

    def copy_in(self, seed: Path) -> None:
        assert self._launched is not None
        root = os.open(f"/proc/{self._launched.init_pid}/root{self.spec.workdir}",
                       os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fs.copy_in(seed, root)
        finally:
            os.close(root)

    def finish(self, timeout: float) -> tuple[int, bool, ResourceUsage]:
        launched = self._launched
        assert launched is not None
        timed_out = False
        pidfd = os.pidfd_open(launched.proc.pid)
        try:
            poll = select.poll()
            poll.register(pidfd, select.POLLIN)
            if not poll.poll(max(0.0, timeout) * 1000.0):
                timed_out = True
                launched.kill()
        finally:
            os.close(pidfd)
        usage = launched.reap(grace=2.0)
        code = launched.proc.returncode if launched.proc.returncode is not None else -1
        self.close()
        return code, timed_out, usage

    def close(self) -> None:
        if os.getpid() != self._made_by:  # a forked child's copy: the sandbox is the parent's
            return
        launched, self._launched = self._launched, None
        if launched is not None:
            if launched.proc.returncode is None:
                launched.kill()
                launched.reap()
            launched.close()
        with contextlib.suppress(OSError):
            self.channel.close()
