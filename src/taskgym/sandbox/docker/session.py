"""A docker session: a container and its persistent shell, driven like the local session."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from taskgym.errors import SandboxError
from taskgym.sandbox import _fs
from taskgym.sandbox._commands import (
    BAD_STATUS_NOTE,
    CONTROL_DIR,
    STATUS_MAX,
    BadStatus,
    CommandFile,
    encode_text,
    output_cap_note,
)
from taskgym.sandbox.base import ExecResult, ResourceUsage, SandboxSpec, Session
from taskgym.sandbox.docker.container import Container, Shell, quote
from taskgym.sandbox.output import decode_capped
from taskgym.sandbox.procs import SANDBOX_UID, ticks_at
from taskgym.sandbox.snapshot import SnapshotSupport

if TYPE_CHECKING:
    from taskgym.sandbox.docker.backend import DockerBackend

__all__ = ["LIVE_SESSIONS", "DockerSession"]

class DockerSession(SnapshotSupport, _fs.WorkspaceFiles, Session):
    """A container with a persistent bash; see :class:`taskgym.sandbox.Session`."""

    limits_enforced_by = "cgroup"

    def __init__(self, backend: DockerBackend, spec: SandboxSpec,
                 item: tuple[Container, Shell], seed: Path | None) -> None:
        self.spec = spec
        self.cpu_limited = spec.cpus is not None  # the container's nano_cpus quota
        self._backend = backend
        self._made_by = os.getpid()
        self._container, self._shell = item
        self._shell_open: Shell | None = self._shell
        self._lock = threading.Lock()
        self._tag = b"__TG_" + os.urandom(8).hex().encode()
        self._marker = b"\n" + self._tag
        self._root_fd = -1
        self._cmd_fd = -1
        self._commands = CommandFile(-1)
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
            finally:
                os.close(control)
            if seed is not None:
                _fs.copy_in(seed, self._root_fd)
                own_tree(self._root_fd)
            self._bootstrap()
        except BaseException:
            self.close()
            raise
        LIVE_SESSIONS.add(self)

    def _bootstrap(self) -> None:
        tag = self._tag.decode()
        env = dict(self.spec.env)  # PATH is the image's (Container.shell_env) unless spec.env sets it
        exports = "".join(f"export {key}={quote(value)}\n" for key, value in env.items())
        # markers carry a sequence number, so a marker a command forged (or an earlier
        # command's) is told from this command's; the control pipe's inherited descriptor is
        # closed (bash reads its close-on-exec copy), so no command can read the protocol
        script = (
            "exec 3<&-\n"
            f"__tgm() {{ printf '\\n{tag}%d %d\\n' \"$1\" \"$2\"; printf '\\n{tag}%d\\n' \"$2\" >&2; }}\n"
            "__ts() { __tgm \"$?\" \"$1\"; }\n"  # a trigger ends with __ts <sequence number>
            "readonly -f __tgm __ts\n"
            f"set +o history; unset HISTFILE; umask 022; cd {quote(self.spec.workdir)}\n"
            f"{exports}true; __ts 1\n"
        )
        self._seq = 1
        ready = self._send(encode_text(script, "the shell's environment"), 30.0)
        if ready.exit_code != 0 or ready.restarted:
            raise SandboxError(f"the container shell did not start: {ready.stderr}")
        self._shell.find_pid()

    # -- life cycle -------------------------------------------------------------------
    @property
    def alive(self) -> bool:
        return self._shell_open is not None and not self._shell.dead

    def stop(self) -> None:
        with self._lock:
            self._stop()

    def _stop(self) -> None:
        if self._shell_open is not None:
            self._usage = self._container.usage()
            self._container.kill_all()
            self._shell.close()
            self._shell_open = None

    def _restart(self) -> None:
        """Replace a dead or hung shell; the workspace stays, processes do not."""
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
        for attr in ("_root_fd", "_cmd_fd"):
            fd = getattr(self, attr)
            if fd >= 0:
                os.close(fd)
                setattr(self, attr, -1)
        if self._shell_open is not None:
            self._shell.close()
            self._shell_open = None
        self._container.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- files ------------------------------------------------------------------------
    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        super().write_file(path, data, mode)
        _own_path(self._root(), _fs.relative_parts(path, self.spec.workdir))

    # -- commands ---------------------------------------------------------------------
    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        limit = timeout if timeout is not None else self.spec.command_timeout_sec
        with self._lock:
            if self._shell_open is None:
                raise SandboxError("the session is stopped")
            self._seq += 1
            return self._send(self._commands.trigger(command, self._seq), limit, killable=True)

    def _send(self, script: bytes, timeout: float, killable: bool = False) -> ExecResult:
        """Write ``script`` and collect output up to the markers on stdout and stderr."""
        started = time.monotonic()
        deadline = started + timeout
        shell = self._shell
        out, err = bytearray(), bytearray()
        code = -1
        timed_out = runaway = hung = False
        out_done = err_done = bad_status = False
        give_up: float | None = None
        limit = self.spec.stream_limit_bytes
        alive = shell.send(script)
        while alive and not (out_done and err_done):
            now = time.monotonic()
            wait_until = give_up if give_up is not None else deadline
            if now >= wait_until:
                if give_up is not None or not killable:
                    hung = True
                    break
                timed_out = True
                self._kill_started(started)
                give_up = now + 2.0
                continue
            out_len, err_len = len(out), len(err)
            alive = shell.read(out, err, wait_until - now)
            try:
                if not out_done and len(out) > out_len:
                    found = self._find_marker(out, out_len, self._marker, with_status=True)
                    if found is not None:
                        idx, code = found
                        del out[idx:]
                        out_done = True
                if not err_done and len(err) > err_len:
                    found = self._find_marker(err, err_len, self._marker, with_status=False)
                    if found is not None:
                        del err[found[0]:]
                        err_done = True
            except BadStatus:  # the agent's doing: a fresh shell, as for a hung one
                bad_status = hung = True
                break
            for buf in (out, err):
                if len(buf) > limit:  # runaway output: keep the head and the recent tail
                    keep = limit // 2
                    del buf[keep : len(buf) - keep]
                    if not runaway and killable:
                        runaway = True
                        self._kill_started(started)
        dead = not alive
        if dead:
            code = shell.exit_code()
        if (dead or hung) and killable:
            self._restart()
        cap = self.spec.output_limit_bytes
        note = output_cap_note(limit) if runaway else ""
        if bad_status:
            note += BAD_STATUS_NOTE
        return ExecResult(
            stdout=decode_capped(out, cap), stderr=decode_capped(err, cap) + note,
            exit_code=124 if timed_out else -1 if bad_status else code,
            duration_sec=time.monotonic() - started, timed_out=timed_out,
            truncated=runaway or len(out) > cap or len(err) > cap, restarted=dead or hung)

    def _find_marker(self, buf: bytearray, old_len: int, marker: bytes,
                     with_status: bool) -> tuple[int, int] | None:
        """Where this command's marker starts in ``buf`` and the status it carries, once its
        line is whole: ``marker``, then (``with_status``) the exit status and a space, then
        this command's sequence number. ``old_len``: how much of ``buf`` was searched before.
        Raises :class:`BadStatus` for a marker line of any other shape. (What follows the
        marker is dropped: background jobs may print after it.)"""
        idx = buf.find(marker, max(0, old_len - len(marker) - STATUS_MAX))
        if idx < 0:
            return None
        begin = idx + len(marker)
        end = buf.find(b"\n", begin, begin + STATUS_MAX)
        if end < 0:
            if len(buf) - begin >= STATUS_MAX:
                raise BadStatus(bytes(buf[idx:begin + STATUS_MAX]))
            return None
        line = bytes(buf[begin:end])
        code, space, seq = line.partition(b" ") if with_status else (b"0", b" ", line)
        if seq != b"%d" % self._seq or not space or not code.isdigit() or len(code) > 3:
            raise BadStatus(line)
        return idx, int(code)

    def _kill_started(self, since: float) -> None:
        """SIGKILL every process of the container started at or after ``since``."""
        since_tick = ticks_at(since)
        for pid, start in self._container.processes():
            if pid != self._shell.pid and start >= since_tick:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, 9)


    # -- snapshots (taskgym.sandbox.snapshot) --------------------------------------------
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
