"""A local session: one persistent bash inside a bubblewrap sandbox, driven over a control
pipe, with a status socket and output files (see docs/architecture.md, the step protocol)."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import signal
import socket
import subprocess
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path

from taskgym.errors import SandboxError
from taskgym.sandbox.base import ResourceUsage, SandboxSpec
from taskgym.sandbox.host import fs, gil_held
from taskgym.sandbox.host.cleanup import runtime_root
from taskgym.sandbox.host.os_errors import resource_error
from taskgym.sandbox.host.procs import children, descendants, start_tick, ticks_at
from taskgym.sandbox.local.backend import LocalBackend
from taskgym.sandbox.local.launch import Launched
from taskgym.sandbox.shell.commands import CONTROL_DIR, CommandFile
from taskgym.sandbox.shell.protocol import open_output, status_socket
from taskgym.sandbox.shell.session import OUTPUT_NAMES, ShellSession
from taskgym.sandbox.snapshots import disk

__all__ = ["LocalSession"]

class LocalSession(ShellSession):
    """A bubblewrap sandbox with a persistent bash; see :class:`taskgym.sandbox.Session`.

    The shell reads a tiny script from a control pipe: the trigger line of each command
    (:mod:`taskgym.sandbox.shell.commands`). All commands run at the shell's top level, as typed
    in a terminal: ``declare`` makes globals that persist; a one-liner holding ``return``
    takes the file path, where ``return`` ends the sourced file. The shell's original
    stdout is its status socket (:mod:`taskgym.sandbox.shell.session`): a step is one write
    and, most often, one wake-up to read one line. The shell's pid is learnt from the ready
    line, when nothing else runs in the sandbox, and checked to be the child of
    bubblewrap's init. A subshell holds bash's saved copy of the socket, and a command can
    hand it to a program (``prog <&10``): neither can end a later command. Commands read
    /dev/null as stdin and the control pipe is open only as bash's close-on-exec script
    descriptor, so nothing they start can consume the protocol by accident. The sandbox
    ends with its shell (bubblewrap's init is the pid namespace's), which closes the socket.
    """

    def __init__(self, backend: LocalBackend, spec: SandboxSpec, seed: Path | None) -> None:
        self.spec = spec
        self._backend = backend
        self._made_by = os.getpid()
        self._init_protocol()
        self._usage = ResourceUsage()
        self._root_fd = -1
        self._cmd_fd = -1
        self._ctl = -1
        self._status_sock: socket.socket | None = None
        self._proc: Launched | None = None
        self._disk = self._new_disk()
        self._boot(seed_dir=seed, seed_fd=None)
        _LIVE.add(self)

    # -- life cycle -------------------------------------------------------------------
    def _boot(self, seed_dir: Path | None, seed_fd: int | None) -> None:
        try:
            ctl_r, ctl_w = os.pipe()
            status, shell_status = status_socket()
        except OSError as exc:
            if "ctl_w" in locals():
                os.close(ctl_r)
                os.close(ctl_w)
            raise resource_error("could not start the sandbox shell", exc) from exc
        try:
            launched = self._backend.launch(
                self.spec, ["/bin/bash", "--norc", "--noprofile", f"/dev/fd/{ctl_r}"], [ctl_r],
                stdout=shell_status.fileno(),
                workspace=None if self._disk is None else str(self._disk.path))
        except BaseException:
            os.close(ctl_w)
            status.close()
            raise
        finally:
            os.close(ctl_r)
            shell_status.close()
        self._proc = launched
        self.limits_enforced_by = "cgroup" if launched.cgroup is not None else "rlimit"
        self.cpu_limited = launched.cgroup is not None and launched.cgroup.cpu_limited
        self._ctl = ctl_w
        os.set_blocking(ctl_w, False)  # written holding the GIL: full must fail, not wait
        proc = launched.proc
        assert proc.stderr
        self._status_sock = status
        self._bwrap_err = proc.stderr.fileno()
        status.setblocking(False)
        os.set_blocking(self._bwrap_err, False)
        self._attach_shell(status.fileno(), status.fileno(), 0)  # nothing else runs yet
        # the script is read from bash's own close-on-exec copy of the control pipe (255)
        bootstrap = self._bootstrap_script(ctl_r)
        old_fd = self._root_fd
        try:
            ready = self._send(bootstrap, 10.0)
            if ready.exit_code != 0 or ready.restarted:
                raise SandboxError(f"the sandbox shell did not start: {ready.stderr}")
            if self._shell_pid not in children(launched.init_pid):
                raise SandboxError("the sandbox's ready line did not come from its shell "
                                   f"(pid {self._shell_pid}); report this as a bug")
            proc_root = f"/proc/{launched.init_pid}/root"
            control = os.open(proc_root + CONTROL_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                self._cmd_fd = os.open("cmd", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644,
                                       dir_fd=control)
                self._commands = CommandFile(self._cmd_fd)
                self._out_fd, self._err_fd = (open_output(name, control) for name in OUTPUT_NAMES)
                self._out_off = self._err_off = 0
            finally:
                os.close(control)
            self._root_fd = os.open(proc_root + self.spec.workdir,
                                    os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            if seed_dir is not None:
                fs.copy_in(seed_dir, self._root_fd)
            if seed_fd is not None:
                with tempfile.TemporaryDirectory(dir=runtime_root()) as tmp:
                    fs.copy_out(seed_fd, Path(tmp))
                    fs.copy_in(Path(tmp), self._root_fd)
        except BaseException as exc:
            self.close()
            if isinstance(exc, OSError):
                raise resource_error("could not prepare the sandbox", exc) from exc
            raise
        finally:
            if old_fd >= 0:
                os.close(old_fd)

    def _restart(self) -> None:
        """Replace a dead or hung shell with a fresh sandbox holding the same workspace."""
        self._restart_pending = False
        old_fd = os.dup(self._root_fd)
        try:
            self._shutdown_processes()  # an on-disk workspace stays where it is: no copy
            self._boot(seed_dir=None, seed_fd=old_fd if self._disk is None else None)
        finally:
            os.close(old_fd)

    def _shutdown_processes(self) -> None:
        if self._proc is not None:
            used = self._proc.reap()
            self._usage.cpu_sec += used.cpu_sec
            self._usage.peak_memory_bytes = max(self._usage.peak_memory_bytes,
                                                used.peak_memory_bytes)
            self._proc.close()
            self._proc = None
        self._close_fds("_ctl", "_cmd_fd", "_out_fd", "_err_fd")  # the stopped shell's
        if self._status_sock is not None:
            self._detach_shell()
            self._status_sock.close()
            self._status_sock = None

    def _close_fds(self, *attrs: str) -> None:
        for attr in attrs:
            fd = getattr(self, attr)
            if fd >= 0:
                os.close(fd)
                setattr(self, attr, -1)

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.proc.poll() is None

    def stop(self) -> None:
        with self._lock:
            self._shutdown_processes()

    def usage(self) -> ResourceUsage:
        usage = ResourceUsage(self._usage.cpu_sec, self._usage.peak_memory_bytes)
        if self._proc is not None and self._proc.cgroup is not None:
            usage.peak_memory_bytes = max(usage.peak_memory_bytes,
                                          self._proc.cgroup.peak_memory())
        return usage

    def close(self) -> None:
        if os.getpid() != self._made_by:  # a forked child's copy: the sandbox is the parent's
            return
        self._shutdown_processes()
        self._close_fds("_root_fd")
        workspace, self._disk = self._disk, None
        if workspace is not None:
            workspace.remove()

    def _new_disk(self) -> disk.DiskWorkspace | None:
        """The workspace subvolume when the runtime root allows (:mod:`taskgym.sandbox.snapshots.disk`)."""
        try:
            found = disk.new_workspace(self.spec.disk_mb)
        except OSError as exc:
            raise resource_error("could not make the sandbox's workspace", exc) from exc
        self.workspace_storage = "tmpfs" if found is None else "btrfs"
        return found

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- the protocol's hooks (taskgym.sandbox.shell.session) ------------------------------
    def _running(self) -> bool:
        return self._proc is not None

    def _write_script(self, script: bytes) -> str:
        try:
            gil_held.write(self._ctl, script)
        except BrokenPipeError:
            return "dead"
        except BlockingIOError:  # the shell stopped reading its input: treat it as hung
            return "hung"
        return ""

    def _killer(self, since: float) -> Callable[[], None]:
        return functools.partial(_kill_started, self._proc, since)

    def _reaper(self) -> Callable[[], tuple[int | None, bytes]]:
        assert self._proc is not None
        return functools.partial(_dead_shell, self._proc, self._bwrap_err)

    def _shell_gone(self) -> bool:
        return self._proc is None or self._proc.proc.poll() is not None

    # -- snapshots (taskgym.sandbox.snapshots.session_snapshot) --------------------------------------------
    def _control_path(self) -> str:
        if self._proc is None:
            raise SandboxError("the session is stopped")
        return f"/proc/{self._proc.init_pid}/root{CONTROL_DIR}"

    def _background(self) -> list[int]:
        if self._proc is None:
            return []
        keep = {self._proc.init_pid, self._proc.proc.pid, *children(self._proc.init_pid)}
        return [pid for pid in descendants(self._proc.init_pid) if pid not in keep]

    def _fresh_shell(self, keep_workspace: bool = False) -> None:
        """A new sandbox in place of this one: holding the same workspace when
        ``keep_workspace``, else a new, empty tmpfs."""
        with self._lock:
            if keep_workspace:
                self._restart()
                return
            self._shutdown_processes()
            self._boot(seed_dir=None, seed_fd=None)

def _kill_started(proc: Launched | None, since: float) -> None:
    """SIGKILL every process of the sandbox ``proc`` started at or after ``since`` (monotonic)."""
    if proc is None:
        return
    since_tick = ticks_at(since)
    keep = {proc.init_pid, proc.proc.pid}
    keep.update(children(proc.init_pid))  # the shell itself
    for pid in descendants(proc.init_pid):  # the whole pid namespace: orphans go to its init
        start = start_tick(pid)
        if pid not in keep and start is not None and start >= since_tick:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

def _dead_shell(proc: Launched, bwrap_err: int) -> tuple[int | None, bytes]:
    """The exit status of a dead shell's sandbox ``proc`` and what bubblewrap wrote on
    ``bwrap_err`` (blocks up to a second)."""
    code: int | None = None
    said = b""
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        code = proc.proc.wait(timeout=1.0)
    with contextlib.suppress(OSError):
        said = os.read(bwrap_err, 65536)
    return code, said


_LIVE: weakref.WeakSet[LocalSession] = weakref.WeakSet()

@atexit.register
def _close_all() -> None:
    """Close sessions a program forgot, so its exit leaves nothing behind."""
    for session in list(_LIVE):
        with contextlib.suppress(Exception):
            session.close()
