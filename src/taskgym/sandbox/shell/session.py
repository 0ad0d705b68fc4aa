"""What the local and docker sessions share: one persistent bash driven by the status-line
protocol, whatever started it (bubblewrap, or ``docker exec``). See docs/architecture.md,
the step protocol.

For each command the host sends a trigger line down the shell's input (see
:mod:`taskgym.sandbox.shell.commands`): the command runs at the shell's top level, then ``__ts``
writes ``<tag><status> <sequence number>`` on the shell's status socket. The shell's stdout
and stderr are files on two small tmpfs mounts sized at the stream limit; after a command
the host reads them from where it left off (emptying them before a command now and then),
so output is never lost to a full pipe. Only the shell itself can end a command: the
host's end of the status socket asks for the writer's credentials (``SO_PASSCRED``), so the
kernel stamps each write with the pid of the process that made it (in the host's pid
namespace) and never joins two writers' bytes in one read; bytes from any pid but the
shell's are a protocol violation, and anything but the expected line restarts the shell.
Each command runs without the socket's descriptor (``251>&-``), so the programs it starts
see only 0-2, as in a terminal, and a socket cannot be reopened through ``/proc``.

A subclass starts the shell and, for each shell, calls :meth:`ShellSession._attach_shell`
with what the protocol waits on; it implements the hooks (``_running``, ``_write_script``,
``_killer``, ``_reaper``, ``_shell_gone``, ``_restart``).
"""

from __future__ import annotations

import abc
import os
import secrets
import select
import threading
import time
from collections.abc import Callable
from typing import Any

from taskgym.errors import SandboxError
from taskgym.sandbox.base import CONCURRENT_AEXEC, ExecResult, Session
from taskgym.sandbox.host import fs
from taskgym.sandbox.shell.commands import (
    BAD_STATUS_NOTE,
    CONTROL_DIR,
    STATUS_FD,
    BadStatus,
    CommandFile,
    encode_text,
    output_cap_note,
)
from taskgym.sandbox.shell.drivers import LoopDriver, Steps, drive_blocking
from taskgym.sandbox.shell.plans import Plan
from taskgym.sandbox.shell.protocol import (
    REWIND_AT,
    RUNAWAY_CHECK_SEC,
    output_full,
    parse_status,
    read_capped,
    read_status,
)
from taskgym.sandbox.snapshots.session_snapshot import SnapshotSupport

__all__ = ["OUTPUT_FILES", "OUTPUT_NAMES", "ShellSession"]

OUTPUT_NAMES = ("o/out", "e/err")
"""The shell's stdout and stderr in :data:`CONTROL_DIR`, each alone on a tmpfs (its folder)
sized at the stream limit."""
OUTPUT_FILES = tuple(f"{CONTROL_DIR}/{name}" for name in OUTPUT_NAMES)
"""The same as paths in the sandbox."""


class ShellSession(SnapshotSupport, fs.WorkspaceFiles, Session):
    """A session whose persistent bash speaks the status-line protocol (the module's
    docstring); :class:`~taskgym.sandbox.base.Session` says what each method does."""

    def _init_protocol(self) -> None:
        """The protocol's state before the first shell starts."""
        self._lock = threading.Lock()
        self._tag = b"__TG_" + secrets.token_hex(8).encode()
        self._seq = 0
        self._shell_pid = 0  # the host pid of the shell, the one writer of status lines
        self._status = -1  # the host's end of the status socket
        self._wait_fd = -1  # readable once a status line came (or the shell ended)
        self._commands = CommandFile(-1)
        self._out_fd = -1
        self._err_fd = -1
        self._out_off = 0
        self._err_off = 0
        self._restart_pending = False
        self._driver = LoopDriver()
        self._poll = select.poll()

    def _attach_shell(self, status: int, wait_fd: int, shell_pid: int) -> None:
        """Drive a new shell: its status socket ``status`` (non-blocking), the descriptor
        ``wait_fd`` the drivers wait on, and its host pid (0: learnt from the ready line,
        which must then come while nothing else runs in the sandbox)."""
        self._status, self._wait_fd, self._shell_pid = status, wait_fd, shell_pid
        self._poll = select.poll()
        self._poll.register(wait_fd, select.POLLIN)
        self._driver.attach(wait_fd)
        self._seq = 1  # the number the next status line must carry (the host's count)

    def _detach_shell(self) -> None:
        """Stop waiting on the shell's descriptors, before they are closed."""
        self._driver.detach()
        self._status = self._wait_fd = -1

    def _bootstrap_script(self, close_fd: int, setup: str = "") -> bytes:
        """The shell's first input: close the inherited copy ``close_fd`` of its input (bash
        reads its own close-on-exec copy, so no command can read or write the protocol),
        keep the status socket (its stdout) as :data:`STATUS_FD`, send stdout and stderr to
        the output files, define ``__ts``, run ``setup``, and report the ready line."""
        out, err = OUTPUT_FILES
        return encode_text(
            f"exec {close_fd}<&- {STATUS_FD}>&1 1>>{out} 2>>{err}\n"
            f"__ts() {{ printf '{self._tag.decode()}%d %s\\n' \"$?\" \"$1\" >&{STATUS_FD}"
            " || exit 125; }\n"
            "readonly -f __ts; set +o history; unset HISTFILE; umask 022\n"
            f"{setup}__ts 1\n", "the shell's environment")

    # -- the hooks of a backend ------------------------------------------------------------
    @abc.abstractmethod
    def _running(self) -> bool:
        """Whether a shell was started (and not stopped) for the protocol to drive."""

    @abc.abstractmethod
    def _write_script(self, script: bytes) -> str:
        """Send ``script`` to the shell: ``""`` when sent, ``"dead"`` when its input is
        closed, ``"hung"`` when it stopped reading."""

    @abc.abstractmethod
    def _killer(self, since: float) -> Callable[[], None]:
        """What SIGKILLs every process of the sandbox started at or after ``since``
        (monotonic) but the shell; it may block."""

    @abc.abstractmethod
    def _reaper(self) -> Callable[[], tuple[int | None, bytes]]:
        """What gives a dead shell's exit status and any message of its launcher; it may
        block."""

    @abc.abstractmethod
    def _shell_gone(self) -> bool:
        """Whether the shell has ended (asked when the wait ended with no status to read)."""

    @abc.abstractmethod
    def _restart(self) -> None:
        """Replace a dead or hung shell; the workspace stays, processes do not."""

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
                self._restart_pending = self._running()
                raise
        finally:
            job = driver.job
            if job is not None and not job.done():  # cancelled while a thread works on it
                job.add_done_callback(lambda _job: self._lock.release())
            else:
                self._lock.release()

    def exec_plan(self, command: str, timeout: float | None = None) -> Plan[ExecResult]:
        """:meth:`exec` as a plan that waits on the shell's wait descriptor (read anew at each
        wait: a restart replaces it); only what blocks (killing what a command started, a
        restart, a restart left pending) is yielded as a call. One command per session at a
        time, as for :meth:`aexec`; closed before its end (an interrupted driver), the shell
        is restarted before the next command, its state being unknown."""
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
                    answer = yield ((self._wait_fd, request) if isinstance(request, float)
                                    else request)
                except BaseException:
                    steps.close()
                    self._restart_pending = self._running()
                    raise
        finally:
            self._lock.release()

    def _trigger(self, command: str) -> bytes:
        """The next command's trigger line (the command file written), its number counted."""
        if not self._running():
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

        The one state machine of a command, for every driver of
        :mod:`taskgym.sandbox.shell.drivers` (whose docstring says what it yields).
        """
        started = time.monotonic()
        deadline = started + timeout
        since = started if killable else None
        status = b""
        code: int | None = None
        timed_out = runaway = bad_status = False
        sent = self._write_script(script)
        dead, hung = sent == "dead", sent == "hung"
        give_up: float | None = None
        while not (dead or hung) and code is None:
            now = time.monotonic()
            wait_until = give_up if give_up is not None else deadline
            if now >= wait_until:
                if give_up is not None or since is None:
                    hung = True
                    break
                timed_out = True
                yield self._killer(since)
                give_up = now + 2.0
                continue
            # wake up now and then to stop runaway output; a quick command answers first
            if not (yield min(wait_until - now, RUNAWAY_CHECK_SEC)):
                if not runaway and since is not None and output_full(self.spec, self._out_fd, self._err_fd):
                    runaway = True
                    yield self._killer(since)
                continue
            try:
                chunk, writer = read_status(self._status)
            except BlockingIOError:  # woken by the shell's end, or by nothing
                dead = self._shell_gone()
                continue
            if not chunk:  # every holder of the socket is gone
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
        launcher_said = b""
        if dead and self._running():
            code, launcher_said = yield self._reaper()
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
            stdout=out, stderr=err + launcher_said.decode("utf-8", errors="replace"),
            exit_code=124 if timed_out else -1 if code is None or bad_status else code,
            duration_sec=time.monotonic() - started, timed_out=timed_out,
            truncated=runaway or out_cut or err_cut, restarted=restarted,
        )

