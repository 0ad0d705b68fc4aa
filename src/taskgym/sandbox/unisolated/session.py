"""A session of the unisolated backend: one plain ``bash`` in a host temp folder, driven over
its stdin, each command's status on a pipe of its own (see :mod:`taskgym.sandbox.unisolated`,
**not a sandbox**).

Each command is written to a file in a control folder next to the workspace and sourced by
the shell at its top level, with stdin from ``/dev/null``, stdout and stderr to files there
and the status pipe closed for it; then the shell writes ``<status> <tag>`` on the pipe. A
command past its deadline, or past the stream limit on stdout or stderr, has what it started
killed (the shell's descendants that were not there before it); a shell that does not answer
then, or that exited, is replaced by a new one in the same workspace (``restarted``).
"""

from __future__ import annotations

import os
import secrets
import select
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from taskgym.errors import ConfigError, SandboxError
from taskgym.sandbox.base import ExecResult, ResourceUsage, SandboxSpec, Session
from taskgym.sandbox.host import fs
from taskgym.sandbox.host.procs import descendants, start_tick
from taskgym.sandbox.shell.commands import encode_text, output_cap_note
from taskgym.sandbox.shell.output import decode_capped

__all__ = ["UnisolatedSession", "host_env", "refuse_mounts"]

_GRACE_SEC = 2.0
"""How long a shell has to report after what its command started was killed."""


def refuse_mounts(spec: SandboxSpec) -> None:
    """Raise :class:`ConfigError` for what of ``spec`` needs a mount (no namespace here)."""
    asked = [name for name in ("ro_binds", "writable_dirs", "image") if getattr(spec, name)]
    if asked:
        raise ConfigError(f"the unisolated backend mounts nothing, so it cannot honour "
                          f"{', '.join(asked)}; use the local or docker backend")


def host_env(spec: SandboxSpec, home: str) -> dict[str, str]:
    """The environment of a command: the host's ``PATH``, ``HOME`` the workspace, and
    ``spec.env``."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "LANG": "C.UTF-8",
            **spec.env}


class UnisolatedSession(fs.WorkspaceFiles, Session):
    """One plain ``bash`` in a host temp folder; **not a sandbox**."""

    limits_enforced_by = "none"
    workspace_storage = "host folder"

    def __init__(self, spec: SandboxSpec, seed: Path | None = None) -> None:
        refuse_mounts(spec)
        self.spec = spec
        self._folder = Path(tempfile.mkdtemp(prefix="taskgym-unisolated-"))
        self.workspace = self._folder / "workspace"
        self._control = self._folder / "control"
        self.workspace.mkdir()
        self._control.mkdir()
        self._root_fd = os.open(self.workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self._shell: subprocess.Popen[bytes] | None = None
        self._status = -1
        self._stopped = False
        try:
            if seed is not None:
                fs.copy_in(seed, self._root_fd)
            self._start_shell()
        except BaseException:
            self.close()
            raise

    def _start_shell(self) -> None:
        read_end, write_end = os.pipe()
        try:
            self._shell = subprocess.Popen(
                ["bash", "--noprofile", "--norc"], cwd=self.workspace,
                env=host_env(self.spec, str(self.workspace)), stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write_end,),
                start_new_session=True)
        except BaseException:
            os.close(read_end)
            raise
        finally:
            os.close(write_end)
        self._status, self._status_fd_inside = read_end, write_end

    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        if self._root_fd < 0 or self._stopped:
            raise SandboxError("the session is stopped or closed")
        script = encode_text(command, "the command")
        limit = timeout if timeout is not None else self.spec.command_timeout_sec
        if self._shell is None or self._shell.poll() is not None:
            self._replace_shell()
        shell = self._shell
        assert shell is not None and shell.stdin is not None
        tag = secrets.token_hex(8)
        control, fd = self._control, self._status_fd_inside
        (control / "command").write_bytes(script + b"\n")
        before = self._descendants()
        started = time.monotonic()
        line = (f'{{ . "{control}/command"; }} </dev/null >"{control}/out" 2>"{control}/err" '
                f"{fd}>&-; echo \"$? {tag}\" >&{fd}\n")
        try:
            shell.stdin.write(line.encode())
            shell.stdin.flush()
        except BrokenPipeError:
            pass  # it died meanwhile: the wait below sees its end
        answer, timed_out, runaway = self._wait(started + limit, before)
        restarted = answer is None
        if restarted:
            code = 124 if timed_out else self._end_shell()
            self._replace_shell()
        else:
            code = 124 if timed_out else answer
        out, err = (self._read_output(name) for name in ("out", "err"))
        cap = self.spec.output_limit_bytes
        note = output_cap_note(self.spec.stream_limit_bytes) if runaway else ""
        return ExecResult(
            stdout=decode_capped(out, cap), stderr=decode_capped(err, cap) + note,
            exit_code=code if code is not None else -1, duration_sec=time.monotonic() - started,
            timed_out=timed_out, truncated=runaway or len(out) > cap or len(err) > cap,
            restarted=restarted)

    def _wait(self, deadline: float, before: set[tuple[int, int | None]]
              ) -> tuple[int | None, bool, bool]:
        """The command's status (``None``: the shell ended or hung), whether it timed out and
        whether its output ran away; kills what it started at the deadline or the stream cap."""
        poll = select.poll()
        poll.register(self._status, select.POLLIN)
        timed_out = runaway = False
        buffer = b""
        while True:
            now = time.monotonic()
            if now >= deadline:
                if timed_out or runaway:
                    return None, timed_out, runaway  # no answer after the kill: a hung shell
                timed_out = True
                self._kill_new(before)
                deadline = now + _GRACE_SEC
            if poll.poll(50):
                chunk = os.read(self._status, 4096)
                if not chunk:
                    return None, timed_out, runaway
                buffer += chunk
                if buffer.endswith(b"\n"):
                    return int(buffer.split()[0]), timed_out, runaway
            elif not runaway and self._output_size() > self.spec.stream_limit_bytes:
                runaway = True
                self._kill_new(before)
                deadline = time.monotonic() + _GRACE_SEC

    def _descendants(self) -> set[tuple[int, int | None]]:
        shell = self._shell
        return set() if shell is None else {(p, start_tick(p)) for p in descendants(shell.pid)}

    def _kill_new(self, before: set[tuple[int, int | None]]) -> None:
        for pid, tick in self._descendants() - before:
            if start_tick(pid) == tick:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _output_size(self) -> int:
        sizes = [0]
        for name in ("out", "err"):
            try:
                sizes.append((self._control / name).stat().st_size)
            except FileNotFoundError:
                pass
        return max(sizes)

    def _read_output(self, name: str) -> bytes:
        path = self._control / name
        try:
            with path.open("rb") as stream:
                data = stream.read(self.spec.stream_limit_bytes)
        except FileNotFoundError:
            return b""
        path.unlink()
        return data

    def _end_shell(self) -> int | None:
        """Kill the shell, its descendants and its process group, wait for it; its exit status
        (``None``: killed). What left the shell's tree before (``setsid``, then its parent
        ended) is out of reach: nothing here is a sandbox."""
        shell = self._shell
        if shell is None:
            return None
        self._kill_new(set())
        try:
            os.killpg(shell.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        code = shell.wait()
        if shell.stdin is not None:
            try:
                shell.stdin.close()
            except BrokenPipeError:
                pass
        os.close(self._status)
        self._status = -1
        self._shell = None
        return code if code >= 0 else None

    def _replace_shell(self) -> None:
        self._end_shell()
        self._start_shell()

    def stop(self) -> None:
        self._stopped = True
        self._end_shell()

    def usage(self) -> ResourceUsage:
        """Not measured: zeros (nothing bounds or accounts a plain subprocess's tree)."""
        return ResourceUsage()

    def close(self) -> None:
        self.stop()
        if self._root_fd >= 0:
            os.close(self._root_fd)
            self._root_fd = -1
        shutil.rmtree(self._folder, ignore_errors=True)

    @property
    def alive(self) -> bool:
        return self._shell is not None and self._shell.poll() is None
