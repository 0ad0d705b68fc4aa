"""A pre-started container: a command started by ``docker exec`` that connects back to the host
through a unix socket the host bound in the container's control folder."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING

from taskgym.errors import SandboxError
from taskgym.sandbox.base import Prestarted, ResourceUsage, SandboxSpec
from taskgym.sandbox.docker.container import Container
from taskgym.sandbox.docker.session import own_tree
from taskgym.sandbox.host import fs
from taskgym.sandbox.host.procs import SANDBOX_UID
from taskgym.sandbox.shell.commands import CONTROL_DIR

if TYPE_CHECKING:
    from taskgym.sandbox.docker.backend import DockerBackend

__all__ = ["DockerPrestarted"]

SOCKET = f"{CONTROL_DIR}/warm.sock"
CONNECT_SEC = 60.0


class DockerPrestarted(Prestarted):
    """``argv`` in a new container (``ro_binds`` copied in, as for one-shot runs); its end of
    the channel is the socket ``TASKGYM_WARM_SOCKET``, accepted once and then unlinked."""

    def __init__(self, backend: DockerBackend, spec: SandboxSpec, argv: list[str]) -> None:
        self.spec = spec
        self._container: Container | None = backend.hidden_container(spec)
        container = self._container
        self._pidfd = -1
        try:
            path = container.root + SOCKET
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as listener:
                listener.bind(path)
                os.chown(path, SANDBOX_UID, SANDBOX_UID)
                listener.listen(1)
                env = {**container.shell_env(), **spec.env}
                env["TASKGYM_WARM_SOCKET"] = SOCKET
                api = container.api
                self._exec_id: str = api.exec_create(
                    container.id, argv, stdin=False, stdout=False, stderr=False,
                    user=f"{SANDBOX_UID}:{SANDBOX_UID}", workdir=spec.workdir,
                    environment=[f"{k}={v}" for k, v in env.items()])["Id"]
                api.exec_start(self._exec_id, detach=True)
                listener.settimeout(CONNECT_SEC)
                try:
                    self.channel, _ = listener.accept()
                except TimeoutError:
                    raise SandboxError("the pre-started grader never connected") from None
                self.channel.settimeout(None)
            os.unlink(path)  # no other process of the container can reach the host now
            pid = int(api.exec_inspect(self._exec_id).get("Pid") or 0)
            self._pidfd = os.pidfd_open(pid)
        except BaseException:
            self.close()
            raise

    @property
    def alive(self) -> bool:
        if self._container is None or self._pidfd < 0:
            return False
        poll = select.poll()
        poll.register(self._pidfd, select.POLLIN)
        return not poll.poll(0)  # a process's descriptor turns readable when it exits

    def copy_in(self, seed: Path) -> None:
        assert self._container is not None
        root = os.open(self._container.root + self.spec.workdir,
                       os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fs.copy_in(seed, root)
            own_tree(root)
        finally:
            os.close(root)

    def finish(self, timeout: float) -> tuple[int, bool, ResourceUsage]:
        container = self._container
        assert container is not None
        poll = select.poll()
        poll.register(self._pidfd, select.POLLIN)
        timed_out = not poll.poll(max(0.0, timeout) * 1000.0)
        if timed_out:
            container.kill_all()
        code = -1
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:  # the engine records the exit a moment later
            info = container.api.exec_inspect(self._exec_id)
            if not info.get("Running"):
                code = int(info["ExitCode"]) if info.get("ExitCode") is not None else -1
                break
            time.sleep(0.005)
        usage = container.usage()
        self.close()
        return code, timed_out, usage

    def close(self) -> None:
        if self._pidfd >= 0:
            os.close(self._pidfd)
            self._pidfd = -1
        container, self._container = self._container, None
        if container is not None:
            container.close()
        channel = getattr(self, "channel", None)
        if channel is not None:
            with contextlib.suppress(OSError):
                channel.close()
