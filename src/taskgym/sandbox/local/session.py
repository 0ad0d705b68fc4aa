"""A local session: one persistent bash inside a bubblewrap sandbox, driven over a control
pipe, with a status socket and output files (see docs/architecture.md, the step protocol)."""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import secrets
import select
import socket
import tempfile
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from taskgym.errors import SandboxError
from taskgym.sandbox import _fs, _gil_held, disk
from taskgym.sandbox._commands import (
    BAD_STATUS_NOTE,
    CONTROL_DIR,
    STATUS_FD,
    BadStatus,
    CommandFile,
    output_cap_note,
)
from taskgym.sandbox.base import CONCURRENT_AEXEC, ExecResult, ResourceUsage, SandboxSpec, Session
from taskgym.sandbox.cleanup import runtime_root
from taskgym.sandbox.local.drivers import LoopDriver, Steps, drive_blocking
from taskgym.sandbox.local.launch import Launched, LocalBackend
from taskgym.sandbox.local.protocol import (
    REWIND_AT,
    RUNAWAY_CHECK_SEC,
    dead_shell,
    kill_started,
    open_output,
    output_full,
    parse_status,
    read_capped,
    read_status,
    status_socket,
)
from taskgym.sandbox.os_errors import resource_error
from taskgym.sandbox.plans import Plan
from taskgym.sandbox.procs import children, descendants
from taskgym.sandbox.snapshot import SnapshotSupport

__all__ = ["LocalSession"]

class LocalSession(SnapshotSupport, _fs.WorkspaceFiles, Session):
    """A bubblewrap sandbox with a persistent bash; see :class:`taskgym.sandbox.Session`.

    The shell reads a tiny script from a control pipe. For each command the host writes
    the command text into a file on the control tmpfs and sends ``. <file>;__ts`` down the
    pipe: the shell sources the file (bash reads a regular file in one call, where it reads
    a pipe one byte at a time), then ``__ts`` reports its status. A short printable
    one-liner skips the file: it rides the trigger line as one ANSI-C quoted word for
    ``eval``, or as it is when it is plain words (see :mod:`taskgym.sandbox._commands`).
    All run at the shell's top level, as typed in a terminal: ``declare``
    makes globals that persist; a one-liner holding ``return`` takes the file path,
    where ``return`` ends the sourced file.

    The shell's stdout and stderr are files on two tmpfs mounts sized at the stream limit;
    after a command the host reads them from where it left off (emptying them before a
    command now and then), so output is never lost to a full pipe. The shell's
    original stdout, a socket, carries only the line ``<tag><status> <sequence number>``
    that ends each command, so a step is one write and, most often, one wake-up to read
    one line. Only the shell itself can write that line: the host's end of the socket asks
    for the writer's credentials (``SO_PASSCRED``), so the kernel stamps each write with the
    pid of the process that made it (in the host's pid namespace) and never joins two
    writers' bytes in one read; bytes from any pid but the shell's (learnt from the ready
    line, when nothing else runs in the sandbox, and checked to be the child of bubblewrap's
    init) are a protocol violation. A subshell holds bash's saved copy of the socket, and a
    command can hand it to a program (``prog <&10``): neither can end a later command.
    Anything but the expected line restarts the shell. Each command runs without the
    socket's descriptor (``251>&-``), so the programs it starts see only 0-2, as in a
    terminal, and a socket cannot be reopened through ``/proc``. Commands read /dev/null
    as stdin and the control pipe is open only as bash's close-on-exec script descriptor,
    so nothing they start can consume the protocol by accident.
    """

    def __init__(self, backend: LocalBackend, spec: SandboxSpec, seed: Path | None) -> None:
        self.spec = spec
        self._backend = backend
        self._made_by = os.getpid()
        self._lock = threading.Lock()
        self._tag = b"__TG_" + secrets.token_hex(8).encode()
        self._usage = ResourceUsage()
        self._root_fd = -1
        self._cmd_fd = -1
        self._commands = CommandFile(-1)
        self._out_fd = -1
        self._err_fd = -1
        self._out_off = 0
        self._err_off = 0
        self._ctl = -1
        self._status_sock: socket.socket | None = None
        self._seq = 0
        self._shell_pid = 0  # the host pid of the shell, the one writer of status lines
        self._proc: Launched | None = None
        self._restart_pending = False
        self._driver = LoopDriver()
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
        self._status, self._bwrap_err = status.fileno(), proc.stderr.fileno()
        status.setblocking(False)
        os.set_blocking(self._bwrap_err, False)
        self._poll = select.poll()
        self._poll.register(self._status, select.POLLIN)
        self._driver.attach(self._status)
        self._seq = 1  # the number the next status line must carry (the host's count)
        self._shell_pid = 0  # learnt from the ready line: nothing else runs in the sandbox yet
        fd = STATUS_FD
        # the script is read from bash's own close-on-exec copy of the control pipe (255):
        # the inherited one is closed, so no command can read (or write) the protocol
        bootstrap = (
            f"exec {ctl_r}<&- {fd}>&1 1>>{CONTROL_DIR}/o/out 2>>{CONTROL_DIR}/e/err\n"
            f"__ts() {{ printf '{self._tag.decode()}%d %s\\n' \"$?\" \"$1\" >&{fd}"
            " || exit 125; }\n"
            "readonly -f __ts; set +o history; unset HISTFILE; umask 022\n"
        )
        old_fd = self._root_fd
        try:
            ready = self._send(bootstrap.encode() + b"__ts 1\n", 10.0)
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
                self._out_fd = open_output("o/out", control)
                self._err_fd = open_output("e/err", control)
                self._out_off = self._err_off = 0
            finally:
                os.close(control)
            self._root_fd = os.open(proc_root + self.spec.workdir,
                                    os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            if seed_dir is not None:
                _fs.copy_in(seed_dir, self._root_fd)
            if seed_fd is not None:
                with tempfile.TemporaryDirectory(dir=runtime_root()) as tmp:
                    _fs.copy_out(seed_fd, Path(tmp))
                    _fs.copy_in(Path(tmp), self._root_fd)
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
            self._driver.detach()
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
        """The workspace subvolume when the runtime root allows (:mod:`taskgym.sandbox.disk`)."""
        try:
            found = disk.new_workspace(self.spec.disk_mb)
        except OSError as exc:
            raise resource_error("could not make the sandbox's workspace", exc) from exc
        self.workspace_storage = "tmpfs" if found is None else "btrfs"
        return found

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- commands ---------------------------------------------------------------------
    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        limit = timeout if timeout is not None else self.spec.command_timeout_sec
        with self._lock:
            return self._send(self._trigger(command), limit, killable=True)

    async def aexec(self, command: str, timeout: float | None = None) -> ExecResult:
        """:meth:`exec` driven by the running event loop, any loop (:class:`LoopDriver`): no
        thread; only the restart of a dead or hung shell (which starts a sandbox) runs in
        the bounded pool. One command per session at a time: a second ``aexec`` while one
        runs raises :class:`SandboxError`."""
        limit = timeout if timeout is not None else self.spec.command_timeout_sec
        if not self._lock.acquire(blocking=False):
            raise SandboxError(CONCURRENT_AEXEC)
        driver = self._driver
        driver.job = None
        try:
            if self._restart_pending:  # an aexec was cancelled mid-command
                await driver.in_pool(self._restart)
            steps = self._protocol(self._trigger(command), limit, True)
            try:
                return await driver.run(steps)
            except BaseException:  # cancelled mid-command: the shell's state is unknown
                self._restart_pending = self._proc is not None
                raise
        finally:
            job = driver.job
            if job is not None and not job.done():  # cancelled while a thread works on it
                job.add_done_callback(lambda _job: self._lock.release())
            else:
                self._lock.release()

    def exec_plan(self, command: str, timeout: float | None = None) -> Plan[ExecResult]:
        """:meth:`exec` as a plan that waits on the shell's status socket (read anew at each
        wait: a restart replaces it); only what blocks (killing what a command started, a
        restart, a restart left pending) is yielded as a call. One command per session at a time, as for
        :meth:`aexec`; closed before its end (an interrupted driver), the shell is restarted
        before the next command, its state being unknown."""
        limit = timeout if timeout is not None else self.spec.command_timeout_sec
        if not self._lock.acquire(blocking=False):
            raise SandboxError(CONCURRENT_AEXEC)
        try:
            if self._restart_pending:  # a plan was closed mid-command: in the pool, as aexec's
                yield self._restart
            steps = self._protocol(self._trigger(command), limit, True)
            answer: Any = None
            while True:
                try:
                    request = steps.send(answer)
                except StopIteration as stop:
                    result: ExecResult = stop.value
                    return result
                try:
                    answer = yield ((self._status, request) if isinstance(request, float)
                                    else request)
                except BaseException:
                    steps.close()
                    self._restart_pending = self._proc is not None
                    raise
        finally:
            self._lock.release()

    def _trigger(self, command: str) -> bytes:
        """The next command's trigger line (the command file written), its number counted."""
        if self._proc is None:
            raise SandboxError("the session is stopped")
        if self._restart_pending:
            self._restart()
        # the files are emptied only now and then: a command's output is what follows
        # the offset read up to (output of background jobs shows up as in a terminal)
        if self._out_off >= REWIND_AT:
            os.ftruncate(self._out_fd, 0)
            self._out_off = 0
        if self._err_off >= REWIND_AT:
            os.ftruncate(self._err_fd, 0)
            self._err_off = 0
        self._seq += 1
        return self._commands.trigger(command, self._seq)

    def _send(self, script: bytes, timeout: float, killable: bool = False) -> ExecResult:
        """:meth:`_protocol`, driven by blocking on the session's ``poll`` object."""
        return drive_blocking(self._protocol(script, timeout, killable), self._poll)

    def _protocol(self, script: bytes, timeout: float, killable: bool) -> Steps:
        """Write ``script`` to the shell, wait for its status line, read its output files.

        ``killable`` enables the timeout and runaway-output kill of what the command
        started, and the restart of a dead or hung shell; at boot neither happens.

        The one state machine of a command, for both drivers of
        :mod:`taskgym.sandbox.local.drivers` (whose docstring says what it yields).
        """
        started = time.monotonic()
        deadline = started + timeout
        since = started if killable else None
        status = b""
        code: int | None = None
        timed_out = runaway = hung = dead = bad_status = False
        give_up: float | None = None
        try:
            _gil_held.write(self._ctl, script)
        except BrokenPipeError:
            dead = True
        except BlockingIOError:  # the shell stopped reading its input: treat it as hung
            hung = True
        while not (dead or hung) and code is None:
            now = time.monotonic()
            wait_until = give_up if give_up is not None else deadline
            if now >= wait_until:
                if give_up is not None or since is None:
                    hung = True
                    break
                timed_out = True
                yield functools.partial(kill_started, self._proc, since)
                give_up = now + 2.0
                continue
            # wake up now and then to stop runaway output; a quick command answers first
            if not (yield min(wait_until - now, RUNAWAY_CHECK_SEC)):
                if not runaway and since is not None and output_full(self.spec, self._out_fd, self._err_fd):
                    runaway = True
                    yield functools.partial(kill_started, self._proc, since)
                continue
            chunk, writer = read_status(self._status)
            if not chunk:  # the shell is gone
                dead = True
                break
            if writer != self._shell_pid:
                if self._shell_pid or since is not None:  # another process wrote it
                    bad_status = hung = True
                    break
                self._shell_pid = writer  # the ready line
            status += chunk
            try:
                code = parse_status(status, self._tag, self._seq)
            except BadStatus:
                bad_status = hung = True  # the agent's doing: a fresh shell, as for a hung one
        restarted = dead or hung
        bwrap_err = b""
        if dead and self._proc is not None:
            code, bwrap_err = yield functools.partial(dead_shell, self._proc, self._bwrap_err)
        cap = self.spec.output_limit_bytes
        out, self._out_off, out_cut = read_capped(self._out_fd, self._out_off, cap)
        err, self._err_off, err_cut = read_capped(self._err_fd, self._err_off, cap)
        if (not runaway and since is not None
                and (out_cut or err_cut or self.spec.stream_limit_bytes <= REWIND_AT + cap)
                and output_full(self.spec, self._out_fd, self._err_fd)):
            runaway = True  # the writer met the full file and gave up before the next check
        if runaway:
            err += output_cap_note(self.spec.stream_limit_bytes)
        if bad_status:
            err += BAD_STATUS_NOTE
        if restarted and since is not None:
            yield self._restart
        return ExecResult(
            stdout=out, stderr=err + bwrap_err.decode("utf-8", errors="replace"),
            exit_code=124 if timed_out else -1 if code is None or bad_status else code,
            duration_sec=time.monotonic() - started, timed_out=timed_out,
            truncated=runaway or out_cut or err_cut, restarted=restarted,
        )

    # -- snapshots (taskgym.sandbox.snapshot) --------------------------------------------
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

_LIVE: weakref.WeakSet[LocalSession] = weakref.WeakSet()

@atexit.register
def _close_all() -> None:
    """Close sessions a program forgot, so its exit leaves nothing behind."""
    for session in list(_LIVE):
        with contextlib.suppress(Exception):
            session.close()
