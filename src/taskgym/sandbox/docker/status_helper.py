"""The docker session's status channel: a Unix socket the host listens on in the container's
control folder, which a small static program, copied by the host into a root-owned tmpfs of
every container (:data:`HELPER_INSIDE`; no host path is mounted), connects as its standard
output before it execs the shell. The
shell keeps the helper's pid, which the host reads from the connection's credentials; from
then on the kernel stamps each write on the socket with its writer's pid, as on the local
backend's socket pair (:mod:`taskgym.sandbox.shell.session`).

The helper (``status_connect.c``) is compiled once per source on first use, with the host's
C compiler and static C library (``gcc`` and ``libc6-dev`` on Debian), into the runtime
root: being static, it runs in any image, whatever its C library.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import secrets
import select
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

from taskgym.errors import SandboxError, SandboxUnavailableError
from taskgym.sandbox.host.cleanup import runtime_root
from taskgym.sandbox.host.procs import SANDBOX_UID

__all__ = ["HELPER_INSIDE", "StatusListener", "helper_binary", "install_helper"]

HELPER_INSIDE = "/.taskgym-bin/status-connect"
"""Where every container has the helper, on a tmpfs of its own that only root may write."""

_SOURCE = Path(__file__).with_name("status_connect.c")
_CFLAGS = ("-static", "-Os", "-s", "-Wall")
_UCRED = struct.Struct("=iII")  # struct ucred: pid, uid, gid


@functools.cache
def helper_binary() -> str:
    """The host path of the compiled helper, built on first use (see the module's docstring).

    Raises :class:`SandboxUnavailableError` when it cannot be built."""
    source = _SOURCE.read_bytes()
    folder = runtime_root() / "bin"
    folder.mkdir(mode=0o755, exist_ok=True)
    key = hashlib.sha256(source + " ".join(_CFLAGS).encode()).hexdigest()[:16]
    target = folder / f"status-connect-{key}"  # a new build for a new source or new flags
    if target.is_file():
        return str(target)
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        raise SandboxUnavailableError(
            "the docker backend builds a small static helper for its status channel and "
            "needs a C compiler and the static C library: `apt-get install gcc libc6-dev`")
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        built = Path(tmp) / "status-connect"
        done = subprocess.run([compiler, *_CFLAGS, "-o", str(built), str(_SOURCE)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise SandboxUnavailableError(
                "could not build the docker backend's status-channel helper (it needs a C "
                "compiler and the static C library: `apt-get install gcc libc6-dev`): "
                f"{done.stderr.strip()[-1000:]}")
        built.chmod(0o755)
        os.replace(built, target)
    return str(target)


@functools.cache
def _helper_bytes() -> bytes:
    return Path(helper_binary()).read_bytes()


def install_helper(root: str) -> None:
    """Copy the helper into the container whose root is ``root`` (``/proc/<pid>/root``), on
    its empty root-owned tmpfs, before any process of the sandbox runs."""
    data = memoryview(_helper_bytes())
    fd = os.open(root + HELPER_INSIDE, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                 | os.O_CLOEXEC, 0o755)
    try:
        while data:
            data = data[os.write(fd, data):]
        os.fchmod(fd, 0o755)
    finally:
        os.close(fd)


class StatusListener:
    """A listening socket in a container's control folder, for one shell to connect."""

    def __init__(self, control_path: str, inside: str) -> None:
        """``control_path``: the control folder's host path; ``inside``: its path in the
        container."""
        name = f"status-{secrets.token_hex(8)}"
        self.path = f"{control_path}/{name}"
        self.inside = f"{inside}/{name}"
        """The socket's path in the container, for the helper to connect."""
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        try:
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            self._sock.bind(self.path)
            os.chown(self.path, SANDBOX_UID, SANDBOX_UID)
            self._sock.listen(1)
            self._sock.setblocking(False)
        except BaseException:
            self.close()
            raise

    def accept(self, timeout: float, exited: int) -> tuple[socket.socket, int]:
        """The connection of the first process to connect (non-blocking, asking for the
        writer's credentials) and that process's pid in the host's pid namespace. Gives up
        once ``timeout`` passes or ``exited``, a stream the starting process holds, ends."""
        poll = select.poll()
        poll.register(self._sock, select.POLLIN)
        poll.register(exited, select.POLLIN)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise SandboxError(f"the container's shell did not connect its status channel "
                                   f"within {timeout:g} s")
            ready = dict(poll.poll(left * 1000.0))
            if self._sock.fileno() in ready:
                break
            if exited in ready:
                if not _peek(exited):
                    raise SandboxError("the container's shell ended before it connected its "
                                       "status channel (is /bin/bash in the image?)")
                poll.unregister(exited)  # it wrote something: wait for the connection only
        conn, _address = self._sock.accept()
        try:
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            conn.setblocking(False)
            pid, _uid, _gid = _UCRED.unpack(
                conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
        except BaseException:
            conn.close()
            raise
        return conn, pid

    def close(self) -> None:
        """Stop listening and remove the socket's name: no other process can connect."""
        self._sock.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def _peek(fd: int) -> bytes:
    """What waits on the socket ``fd`` (empty at its end), left there."""
    sock = socket.socket(fileno=os.dup(fd))
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except BlockingIOError:
        return b"?"
    except OSError:
        return b""
    finally:
        sock.close()
