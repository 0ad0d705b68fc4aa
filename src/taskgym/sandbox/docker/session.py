"""A docker session: a container and its persistent shell, driven like the local session
(:mod:`taskgym.sandbox.shell.session`)."""

from __future__ import annotations

import contextlib
import functools
import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from taskgym.errors import SandboxError
from taskgym.sandbox.base import ResourceUsage, SandboxSpec
from taskgym.sandbox.docker.container import Container, Shell, quote
from taskgym.sandbox.host import fs
from taskgym.sandbox.host.procs import SANDBOX_UID, ticks_at
from taskgym.sandbox.shell.commands import CONTROL_DIR, CommandFile
from taskgym.sandbox.shell.protocol import open_output
from taskgym.sandbox.shell.session import OUTPUT_NAMES, ShellSession

if TYPE_CHECKING:
    from taskgym.sandbox.docker.backend import DockerBackend

__all__ = ["LIVE_SESSIONS", "DockerSession"]

class DockerSession(ShellSession):
    """A container with a persistent bash; see :class:`taskgym.sandbox.Session`.

    The shell reads its input from the ``docker exec`` stream; its stdout is a status socket
    the host listens on in the container's control folder, connected by a static helper that
    then execs bash (:mod:`taskgym.sandbox.docker.status_helper`), so the host knows the
    shell's pid from the connection's credentials before anything runs, and the kernel stamps
    each status line with its writer's pid as on the local backend. Its stdout and stderr
    are files on two tmpfs mounts of the container sized at the stream limit, which the
    host reads through ``/proc/<pid>/root``. The shell's end is seen on a pidfd, as
    processes it left may hold the socket.
    """

    limits_enforced_by = "cgroup"

    def __init__(self, backend: DockerBackend, spec: SandboxSpec,
                 item: tuple[Container, Shell], seed: Path | None) -> None:
        self.spec = spec
        self.cpu_limited = spec.cpus is not None  # the container's nano_cpus quota
        self._backend = backend
        self._made_by = os.getpid()
        self._init_protocol()
        self._container, self._shell = item
        self._shell_open: Shell | None = self._shell
        self._root_fd = -1
        self._cmd_fd = -1
        self._usage = ResourceUsage()
        try:
            self._root_fd = os.open(self._container.root + spec.workdir,
                                    os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            control = os.open(self._container.root + CONTROL_DIR,
                              os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                self._cmd_fd = os.open("cmd", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644,
                                       dir_fd=control)
                self._commands = CommandFile(self._cmd_fd)
                for name in OUTPUT_NAMES:  # the shell's, made before it opens them
                    os.close(os.open(name, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644,
                                     dir_fd=control))
                    os.chown(name, SANDBOX_UID, SANDBOX_UID, dir_fd=control)
                self._out_fd, self._err_fd = (open_output(name, control) for name in OUTPUT_NAMES)
            finally:
                os.close(control)
            if seed is not None:
                fs.copy_in(seed, self._root_fd)
                own_tree(self._root_fd)
            self._bootstrap()
        except BaseException:
            self.close()
            raise
        LIVE_SESSIONS.add(self)

    def _bootstrap(self) -> None:
        shell = self._shell
        assert shell.status is not None and shell.waiter is not None
        for fd in (self._out_fd, self._err_fd):  # what a previous shell's processes wrote
            os.ftruncate(fd, 0)
        self._out_off = self._err_off = 0
        self._attach_shell(shell.status.fileno(), shell.waiter.fileno(), shell.pid)
        # PATH is the image's (Container.shell_env) unless spec.env sets it
        exports = "".join(f"export {key}={quote(value)}\n" for key, value in self.spec.env.items())
        setup = f"cd {quote(self.spec.workdir)}\n{exports}"
        ready = self._send(self._bootstrap_script(3, setup), 30.0)  # 3: the exec's input
        if ready.exit_code != 0 or ready.restarted:
            raise SandboxError(f"the container shell did not start: {ready.stderr}")

    # -- life cycle -------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._shell_open is not None and not self._shell.ended()

    def stop(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self._shell_open is not None:
            self._usage = self._container.usage()
            self._container.kill_all()
            self._detach_shell()
            self._shell.close()
            self._shell_open = None

    def _restart(self) -> None:
        self._restart_pending = False
        self._stop()
        self._container.clear_scratch()
        self._shell = Shell(self._container, self._container.shell_env())
        self._shell_open = self._shell
        self._bootstrap()

    def usage(self) -> ResourceUsage:
        if self._shell_open is None:
            return ResourceUsage(self._usage.cpu_sec, self._usage.peak_memory_bytes)
        return self._container.usage()

    def close(self) -> None:
        if os.getpid() != self._made_by:  # a forked child's copy: the sandbox is the parent's
            return
        if self._shell_open is not None:
            self._detach_shell()
            self._shell.close()
            self._shell_open = None
        for attr in ("_root_fd", "_cmd_fd", "_out_fd", "_err_fd"):
            fd = getattr(self, attr)
            if fd >= 0:
                os.close(fd)
                setattr(self, attr, -1)
        self._container.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- files ------------------------------------------------------------------------
    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        super().write_file(path, data, mode)
        _own_path(self._root(), fs.relative_parts(path, self.spec.workdir))

    # -- the protocol's hooks (taskgym.sandbox.shell.session) ------------------------------
    def _running(self) -> bool:
        return self._shell_open is not None

    def _write_script(self, script: bytes) -> str:
        return self._shell.send(script)

    def _killer(self, since: float) -> Callable[[], None]:
        return functools.partial(self._kill_started, since)

    def _reaper(self) -> Callable[[], tuple[int | None, bytes]]:
        return lambda: (self._shell.exit_code(), b"")

    def _shell_gone(self) -> bool:
        return self._shell.ended()

    def _kill_started(self, since: float) -> None:
        """SIGKILL every process of the container started at or after ``since``."""
        since_tick = ticks_at(since)
        for pid, start in self._container.processes():
            if pid != self._shell.pid and start >= since_tick:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)

    # -- snapshots (taskgym.sandbox.snapshots.session_snapshot) --------------------------------------------
    def _control_path(self) -> str:
        return self._container.root + CONTROL_DIR

    def _background(self) -> list[int]:
        return [pid for pid, _start in self._container.processes() if pid != self._shell.pid]

    def _fresh_shell(self, keep_workspace: bool = False) -> None:
        """Kill every process, start a new shell; the container's workspace always stays."""
        with self._lock:
            if self._root_fd < 0:
                raise SandboxError("the session is closed")
            self._restart()


LIVE_SESSIONS: weakref.WeakSet[DockerSession] = weakref.WeakSet()


def own_tree(root_fd: int) -> None:
    """Give the sandbox user everything under ``root_fd`` (copied in by root)."""
    for _dirpath, dirnames, filenames, dfd in os.fwalk(".", dir_fd=root_fd, follow_symlinks=False):
        for name in (*dirnames, *filenames):
            os.chown(name, SANDBOX_UID, SANDBOX_UID, dir_fd=dfd, follow_symlinks=False)


def _own_path(root_fd: int, parts: list[str]) -> None:
    """Give the sandbox user each folder along ``parts`` and the file at its end."""
    fd = os.dup(root_fd)
    try:
        for index, part in enumerate(parts):
            os.chown(part, SANDBOX_UID, SANDBOX_UID, dir_fd=fd, follow_symlinks=False)
            if index < len(parts) - 1:
                nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                              dir_fd=fd)
                os.close(fd)
                fd = nxt
    finally:
        os.close(fd)
