"""The embedded default backend: bubblewrap namespaces around a persistent shell.

Each session is one ``bwrap`` process tree: new user, pid, network (loopback only), ipc,
uts and cgroup namespaces; a new session (no terminal injection); every capability
dropped; no host ``/`` (only ``/usr`` and a few ``/etc`` files, read-only); the workspace
and ``/tmp`` as size-capped tmpfs; a seccomp filter; dies with its parent. Memory and
process limits come from a cgroup entered before the shell runs, or rlimits where no
cgroup can be had. The host reaches the workspace through a directory descriptor opened
at start, so files can be copied out after every process has been killed.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import os
import resource
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path

from taskgym.errors import ConfigError, SandboxError, SandboxUnavailableError
from taskgym.sandbox import _fs, _gil_held
from taskgym.sandbox._cgroups import CgroupLimits, rlimit_fallback
from taskgym.sandbox._commands import (
    BAD_STATUS_NOTE,
    CONTROL_DIR,
    CONTROL_MB,
    STATUS_FD,
    STATUS_MAX,
    BadStatus,
    CommandFile,
    encode_text,
    output_cap_note,
)
from taskgym.sandbox._seccomp import seccomp_program
from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec, Session
from taskgym.sandbox.cleanup import reap_once, runtime_root, session_name
from taskgym.sandbox.host_python import host_python_view
from taskgym.sandbox.output import decode_capped, join_cut
from taskgym.sandbox.procs import SANDBOX_UID, children, sandbox_processes, start_tick, ticks_at, wait_gone

__all__ = ["LocalBackend", "LocalSession"]

_RUNAWAY_CHECK_SEC = 0.25
"""How often a running command's output files are checked against the stream limit."""
_REWIND_AT = 1 << 16
"""Output files are emptied before a command once this much has been read from them."""
_INSTALL_HINT = (
    "bubblewrap is not installed. Install it with `sudo apt-get install bubblewrap` "
    "(Debian/Ubuntu), `sudo dnf install bubblewrap` (Fedora) or `sudo pacman -S bubblewrap` (Arch), "
    "or pass sandbox='docker'."
)
_PASSWD = "root:x:0:0:root:/root:/usr/sbin/nologin\nagent:x:1000:1000:agent:/tmp:/bin/bash\n"
_GROUP = "root:x:0:\nagent:x:1000:\n"
_ETC_FILES = ("alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime")


def _base_env(spec: SandboxSpec) -> dict[str, str]:
    path = "/usr/bin:/bin"
    if spec.host_python:
        path = f"{Path(sys.executable).parent}:{path}"
    env = {
        "PATH": path,
        "HOME": "/tmp",
        "USER": "agent",
        "LOGNAME": "agent",
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "TERM": "dumb",
    }
    env.update(spec.env)
    return env


def _host_python_args(spec: SandboxSpec) -> list[str]:
    """Binds of the host's Python view (after the sandbox's own tmpfs folders, so that an
    interpreter under /tmp stays visible) and the empty folders over taskgym's material."""
    if not spec.host_python:
        return []
    view = host_python_view()
    own = ("/proc", "/dev", CONTROL_DIR, spec.workdir, *spec.writable_dirs)
    clash = [path for path in view.binds for top in own
             if path == top or path.startswith(top.rstrip("/") + "/")]
    if clash:
        raise ConfigError(f"the Python running taskgym lies in {clash[0]}, which the sandbox "
                          "keeps for itself; run taskgym from an interpreter installed elsewhere")
    args: list[str] = []
    for path in view.binds:
        args += ["--ro-bind", path, path]
    for path in view.hidden:
        args += ["--tmpfs", path, "--remount-ro", path]
    return args


class LocalBackend(Backend):
    """Sandboxes made with bubblewrap on this machine; see the module docstring."""

    name = "local"

    def __init__(self) -> None:
        problem = self.check()
        if problem:
            raise SandboxUnavailableError(problem)
        self._bwrap = shutil.which("bwrap") or "bwrap"
        reap_once()

    def __deepcopy__(self, memo: dict[int, object]) -> LocalBackend:
        return self  # stateless past its check: shared (gymnasium copies make() arguments)

    def __reduce__(self) -> tuple[type[LocalBackend], tuple[()]]:
        return LocalBackend, ()  # another process checks and sets up its own

    @classmethod
    def check(cls) -> str | None:
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return _INSTALL_HINT
        probe = subprocess.run(
            [bwrap, "--unshare-all", "--ro-bind", "/", "/", "--die-with-parent", "true"],
            capture_output=True, text=True, timeout=30,
        )
        if probe.returncode != 0:
            return (
                "bubblewrap cannot create namespaces here: "
                f"{probe.stderr.strip() or probe.returncode}. Unprivileged user namespaces may be "
                "disabled: enable them (`sudo sysctl kernel.unprivileged_userns_clone=1`, or on "
                "Ubuntu 24.04+ `sudo sysctl kernel.apparmor_restrict_unprivileged_userns=0`), "
                "or pass sandbox='docker'."
            )
        return None

    def argv(self, spec: SandboxSpec, info_fd: int, block_fd: int, seccomp_fd: int,
             etc_fds: tuple[int, int]) -> list[str]:
        """The bwrap command line for ``spec`` (no command yet); ``etc_fds`` hold the sandbox's
        ``/etc/passwd`` and ``/etc/group`` (:func:`etc_files`)."""
        if not spec.workdir.startswith("/") or spec.workdir in ("/", "/usr", "/tmp", "/proc"):
            raise ConfigError(f"workdir must be a fresh absolute path, not {spec.workdir!r}")
        args = [self._bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--hostname", "sandbox",
                "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID),
                "--new-session", "--die-with-parent", "--cap-drop", "ALL", "--clearenv",
                "--ro-bind", "/usr", "/usr", "--tmpfs", "/usr/local"]
        for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            host = Path("/") / top
            if host.is_symlink():
                args += ["--symlink", os.readlink(host), f"/{top}"]
            elif host.is_dir():
                args += ["--ro-bind", str(host), f"/{top}"]
        for name in _ETC_FILES:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        # copied into the sandbox's root, not bound: a bind's host path shows in mountinfo
        args += ["--perms", "0644", "--file", str(etc_fds[0]), "/etc/passwd",
                 "--perms", "0644", "--file", str(etc_fds[1]), "/etc/group",
                 "--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys",
                 "--dev", "/dev", "--size", str(64 << 20), "--tmpfs", "/dev/shm",
                 "--remount-ro", "/dev",
                 "--size", str(spec.tmp_mb << 20), "--tmpfs", "/tmp",
                 "--size", str(spec.disk_mb << 20), "--tmpfs", spec.workdir,
                 "--size", str(CONTROL_MB << 20), "--tmpfs", CONTROL_DIR,
                 "--size", str(spec.stream_limit_bytes), "--tmpfs", f"{CONTROL_DIR}/o",
                 "--size", str(spec.stream_limit_bytes), "--tmpfs", f"{CONTROL_DIR}/e"]
        for path in spec.writable_dirs:
            args += ["--size", str(spec.tmp_mb << 20), "--tmpfs", path]
        args += _host_python_args(spec) + ["--remount-ro", "/usr/local"]
        for host_path, inside in spec.ro_binds.items():
            if not Path(host_path).exists():
                raise ConfigError(f"read-only bind source {host_path} does not exist")
            args += ["--ro-bind", host_path, inside]
        args += ["--remount-ro", "/", "--chdir", spec.workdir]
        for key, value in _base_env(spec).items():
            args += ["--setenv", key, value]
        args += ["--info-fd", str(info_fd), "--block-fd", str(block_fd),
                 "--seccomp", str(seccomp_fd)]
        return args

    def launch(
        self, spec: SandboxSpec, command: list[str], pass_fds: Sequence[int] = (),
        stdout: int | None = None,
    ) -> _Launched:
        """Start bwrap around ``command`` with limits in place before it runs; its stdout is
        ``stdout`` when given, else a pipe."""
        opened: list[int] = []
        try:
            for _ in range(3):
                opened += os.pipe()
            info_r, info_w, block_r, block_w, seccomp_r, seccomp_w = opened
            os.write(seccomp_w, seccomp_program())
            os.close(seccomp_w)
            opened.remove(seccomp_w)
            for arg in command:
                encode_text(arg, "the command")
            etc = etc_files()
            opened += etc
            bwrap, *options = self.argv(spec, info_w, block_r, seccomp_r, etc)
            args_fd = _memfd(b"".join(encode_text(option, "a sandbox option") + b"\0"
                                      for option in options))
        except BaseException as exc:
            for fd in opened:
                os.close(fd)
            if isinstance(exc, OSError):
                raise _resource_error("could not set up a sandbox", exc) from exc
            raise
        name = session_name()
        try:
            # bwrap's own process is the sandbox's pid 1, whose environment and command line
            # the sandbox can read: it gets no environment, and its options (host paths)
            # through a descriptor it reads and closes
            proc = subprocess.Popen(
                ["bwrap", "--args", str(args_fd), "--", *command], executable=bwrap, env={},
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE if stdout is None else stdout,
                stderr=subprocess.PIPE,
                pass_fds=(info_w, block_r, seccomp_r, args_fd, *etc, *pass_fds),
                start_new_session=True,
            )
        except OSError as exc:
            for fd in (info_r, info_w, block_r, block_w, seccomp_r, args_fd, *etc):
                os.close(fd)
            raise _resource_error("could not start bwrap", exc) from exc
        for fd in (info_w, block_r, seccomp_r, args_fd, *etc):
            os.close(fd)
        try:
            info = _read_info(info_r, proc)
            init_pid = int(str(info["child-pid"]))
            memory = spec.memory_mb << 20
            cgroup: CgroupLimits | None = None
            try:
                cgroup = CgroupLimits(name, memory, spec.pids, spec.cpus)
                cgroup.add(init_pid)
            except OSError as exc:
                if cgroup is not None:
                    cgroup.close()
                cgroup = None
                _warn_no_cgroup(exc)
                rlimit_fallback(init_pid, memory, spec.pids)
            os.write(block_w, b"1")
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            os.close(info_r)
            os.close(block_w)
        return _Launched(proc, init_pid, str(info.get("pid-namespace", "")), cgroup)

    def start(self, spec: SandboxSpec, seed: Path | None = None) -> LocalSession:
        return LocalSession(self, spec, seed)

    def run(
        self,
        spec: SandboxSpec,
        argv: list[str],
        seed: Path | None = None,
        timeout: float | None = None,
        pass_fds: Sequence[int] = (),
    ) -> tuple[ExecResult, ResourceUsage]:
        command = list(argv)
        if seed is not None:
            spec = spec.model_copy(update={"ro_binds": {**spec.ro_binds, str(seed): "/.seed"}})
            command = ["/bin/sh", "-c", 'cp -a /.seed/. "$0"/ && exec "$@"', spec.workdir, *argv]
        started = time.monotonic()
        launched = self.launch(spec, command, pass_fds)
        proc = launched.proc
        assert proc.stdout and proc.stderr
        limit = timeout if timeout is not None else spec.command_timeout_sec
        out, err, timed_out, runaway = _drain(
            [proc.stdout.fileno(), proc.stderr.fileno()], started + limit, spec.stream_limit_bytes,
            launched.kill,
        )
        usage = launched.reap(grace=2.0)
        launched.close()
        code = proc.returncode if proc.returncode is not None else -1
        note = output_cap_note(spec.stream_limit_bytes) if runaway else ""
        result = ExecResult(
            stdout=decode_capped(out, spec.output_limit_bytes),
            stderr=decode_capped(err, spec.output_limit_bytes) + note,
            exit_code=code, duration_sec=time.monotonic() - started, timed_out=timed_out,
            truncated=runaway or len(out) > spec.output_limit_bytes
            or len(err) > spec.output_limit_bytes,
        )
        return result, usage


class _Launched:
    """One bwrap process tree and its cgroup."""

    def __init__(self, proc: subprocess.Popen[bytes], init_pid: int, pidns: str,
                 cgroup: CgroupLimits | None) -> None:
        self.proc = proc
        self.init_pid = init_pid
        self.pidns = pidns
        self.cgroup = cgroup
        self.init_start = start_tick(init_pid)  # bwrap's pid 1 of the sandbox
        self.rusage: resource.struct_rusage | None = None

    def kill(self) -> None:
        for pid in (self.init_pid, self.proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def reap(self, grace: float = 0.0) -> ResourceUsage:
        """Wait up to ``grace`` seconds for bwrap to exit, kill what is left, and measure."""
        if self.proc.returncode is None:
            deadline = time.monotonic() + grace
            flags = os.WNOHANG
            while True:
                try:
                    pid, status, rusage = os.wait4(self.proc.pid, flags)
                except ChildProcessError:
                    self.proc.wait()
                    break
                if pid:
                    self.rusage = rusage
                    self.proc.returncode = os.waitstatus_to_exitcode(status)
                    break
                if time.monotonic() >= deadline:
                    self.kill()
                    flags = 0  # now wait for it to go
                else:
                    time.sleep(0.001)
        wait_gone(self.init_pid, self.init_start)
        usage = ResourceUsage()
        if self.rusage is not None:
            usage.cpu_sec = self.rusage.ru_utime + self.rusage.ru_stime
            usage.peak_memory_bytes = self.rusage.ru_maxrss * 1024
        if self.cgroup is not None:
            usage.peak_memory_bytes = max(usage.peak_memory_bytes, self.cgroup.peak_memory())
            cpu = self.cgroup.cpu_seconds()
            if cpu is not None:
                usage.cpu_sec = cpu
        return usage

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if self.cgroup is not None:
            self.cgroup.close()
            self.cgroup = None


class LocalSession(_fs.WorkspaceFiles, Session):
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
    one line. Each command runs without it (``251>&-``) and a socket cannot be reopened
    through ``/proc``; anything but the expected line restarts the shell. Commands read
    /dev/null as stdin and the control pipe is open only as bash's close-on-exec script
    descriptor, so nothing they start can consume the protocol.
    """

    def __init__(self, backend: LocalBackend, spec: SandboxSpec, seed: Path | None) -> None:
        self.spec = spec
        self._backend = backend
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
        self._proc: _Launched | None = None
        self._boot(seed_dir=seed, seed_fd=None)
        _LIVE.add(self)

    # -- life cycle -------------------------------------------------------------------
    def _boot(self, seed_dir: Path | None, seed_fd: int | None) -> None:
        try:
            ctl_r, ctl_w = os.pipe()
            status, shell_status = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError as exc:
            if "ctl_w" in locals():
                os.close(ctl_r)
                os.close(ctl_w)
            raise _resource_error("could not start the sandbox shell", exc) from exc
        try:
            launched = self._backend.launch(
                self.spec, ["/bin/bash", "--norc", "--noprofile", f"/dev/fd/{ctl_r}"], [ctl_r],
                stdout=shell_status.fileno())
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
        self._seq = 1  # the number the next status line must carry (the host's count)
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
            proc_root = f"/proc/{launched.init_pid}/root"
            control = os.open(proc_root + CONTROL_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                self._cmd_fd = os.open("cmd", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644,
                                       dir_fd=control)
                self._commands = CommandFile(self._cmd_fd)
                self._out_fd = _open_output("o/out", control)
                self._err_fd = _open_output("e/err", control)
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
                raise _resource_error("could not prepare the sandbox", exc) from exc
            raise
        finally:
            if old_fd >= 0:
                os.close(old_fd)

    def _restart(self) -> None:
        """Replace a dead or hung shell with a fresh sandbox holding the same workspace."""
        old_fd = os.dup(self._root_fd)
        try:
            self._shutdown_processes()
            self._boot(seed_dir=None, seed_fd=old_fd)
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
        self._shutdown_processes()
        self._close_fds("_root_fd")

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    # -- commands ---------------------------------------------------------------------
    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        limit = timeout if timeout is not None else self.spec.command_timeout_sec
        with self._lock:
            if self._proc is None:
                raise SandboxError("the session is stopped")
            # the files are emptied only now and then: a command's output is what follows
            # the offset read up to (output of background jobs shows up as in a terminal)
            if self._out_off >= _REWIND_AT:
                os.ftruncate(self._out_fd, 0)
                self._out_off = 0
            if self._err_off >= _REWIND_AT:
                os.ftruncate(self._err_fd, 0)
                self._err_off = 0
            self._seq += 1
            return self._send(self._commands.trigger(command, self._seq), limit, killable=True)

    def _send(self, script: bytes, timeout: float, killable: bool = False) -> ExecResult:
        """Write ``script`` to the shell, wait for its status line, read its output files.

        ``killable`` enables the timeout and runaway-output kill of what the command
        started, and the restart of a dead or hung shell; at boot neither happens.
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
                self._kill_started(since)
                give_up = now + 2.0
                continue
            # wake up now and then to stop runaway output; a quick command answers first
            wait = min(wait_until - now, _RUNAWAY_CHECK_SEC)
            if not self._poll.poll(wait * 1000.0):
                if not runaway and since is not None and self._output_full():
                    runaway = True
                    self._kill_started(since)
                continue
            chunk = _gil_held.read(self._status, 4096)
            if not chunk:  # the shell is gone
                dead = True
                break
            status += chunk
            try:
                code = self._find_status(status)
            except BadStatus:
                bad_status = hung = True  # the agent's doing: a fresh shell, as for a hung one
        restarted = dead or hung
        bwrap_err = b""
        if dead and self._proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired, OSError):
                code = self._proc.proc.wait(timeout=1.0)
            with contextlib.suppress(OSError):
                bwrap_err = os.read(self._bwrap_err, 65536)
        cap = self.spec.output_limit_bytes
        out, self._out_off, out_cut = _read_capped(self._out_fd, self._out_off, cap)
        err, self._err_off, err_cut = _read_capped(self._err_fd, self._err_off, cap)
        if (not runaway and since is not None
                and (out_cut or err_cut or self.spec.stream_limit_bytes <= _REWIND_AT + cap)
                and self._output_full()):
            runaway = True  # the writer met the full file and gave up before the next check
        if runaway:
            err += output_cap_note(self.spec.stream_limit_bytes)
        if bad_status:
            err += BAD_STATUS_NOTE
        if restarted and since is not None:
            self._restart()
        return ExecResult(
            stdout=out, stderr=err + bwrap_err.decode("utf-8", errors="replace"),
            exit_code=124 if timed_out else -1 if code is None or bad_status else code,
            duration_sec=time.monotonic() - started, timed_out=timed_out,
            truncated=runaway or out_cut or err_cut, restarted=restarted,
        )

    def _find_status(self, buf: bytes) -> int | None:
        """The exit status in ``buf`` once it holds the whole status line of this command
        (``<tag><status> <sequence number>``); ``None`` while it is a beginning of one.

        Raises :class:`BadStatus` for anything else: bytes a command wrote on the channel
        (through bash's saved copy, which its builtins can reach), an earlier command's
        line, or more than one line.
        """
        end = buf.find(b"\n")
        if end < 0:
            if len(buf) > STATUS_MAX or not self._tag.startswith(buf[: len(self._tag)]):
                raise BadStatus(buf)
            return None
        line = buf[:end]
        suffix = b" %d" % self._seq
        code = line[len(self._tag) : len(line) - len(suffix)]
        if (end + 1 != len(buf) or not line.startswith(self._tag) or not line.endswith(suffix)
                or not code.isdigit() or len(code) > 3):
            raise BadStatus(buf)
        return int(code)

    def _output_full(self) -> bool:
        """Whether the command filled its stdout or stderr file (runaway output)."""
        full = self.spec.stream_limit_bytes - 4096  # a tmpfs is full to the page
        return any(os.fstat(fd).st_size >= full for fd in (self._out_fd, self._err_fd))

    def _kill_started(self, since: float) -> None:
        """SIGKILL every process of this sandbox started at or after ``since`` (monotonic)."""
        if self._proc is None:
            return
        since_tick = ticks_at(since)
        keep = {self._proc.init_pid, self._proc.proc.pid}
        keep.update(children(self._proc.init_pid))  # the shell itself
        for pid, start in sandbox_processes(self._proc.pidns):
            if pid not in keep and start >= since_tick:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


_LIVE: weakref.WeakSet[LocalSession] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    """Close sessions a program forgot, so its exit leaves nothing behind."""
    for session in list(_LIVE):
        with contextlib.suppress(Exception):
            session.close()


# -- helpers ----------------------------------------------------------------------------
def _resource_error(what: str, exc: OSError) -> SandboxError:
    """A :class:`SandboxError` for an ``OSError``, saying which limit was hit and what to do."""
    if exc.errno == errno.EMFILE:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return SandboxError(
            f"{what}: this process has no file descriptor left (RLIMIT_NOFILE {soft}, hard limit "
            f"{hard}; each session holds about 10). Close sessions you no longer use, or raise "
            "the limit (`ulimit -n`, or resource.setrlimit(RLIMIT_NOFILE, ...)).")
    if exc.errno == errno.ENFILE:
        return SandboxError(f"{what}: the system's file table is full (fs.file-max): {exc}")
    if exc.errno in (errno.EAGAIN, errno.ENOMEM):
        return SandboxError(f"{what}: out of processes or memory (RLIMIT_NPROC, pids limit or "
                            f"memory): {exc}")
    return SandboxError(f"{what}: {exc}")


def etc_files() -> tuple[int, int]:
    """Descriptors holding the sandbox's ``/etc/passwd`` and ``/etc/group`` (for ``argv``)."""
    passwd = _memfd(_PASSWD.encode())
    try:
        return passwd, _memfd(_GROUP.encode())
    except BaseException:
        os.close(passwd)
        raise


def _memfd(data: bytes) -> int:
    """A close-on-exec descriptor holding ``data``, from its start (what bwrap reads)."""
    fd = os.memfd_create("taskgym-bwrap", os.MFD_CLOEXEC)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_info(fd: int, proc: subprocess.Popen[bytes]) -> dict[str, object]:
    buf = b""
    deadline = time.monotonic() + 30
    poll = select.poll()  # never select(): descriptors past 1023 are ordinary here
    poll.register(fd, select.POLLIN)
    while time.monotonic() < deadline:
        if poll.poll(500):
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
            with contextlib.suppress(ValueError):
                info = json.loads(buf)
                if isinstance(info, dict):
                    return info
        elif proc.poll() is not None:
            break
    err = ""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    raise SandboxError(f"bubblewrap failed to start the sandbox: {err.strip() or 'no answer'}")


_warned = False


def _warn_no_cgroup(exc: OSError) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            f"taskgym: no usable cgroup ({exc}); falling back to rlimits, which bound each process "
            "but not the sandbox as a whole. Run as root, or on cgroup v2 with systemd user "
            "delegation, for real memory and process-count limits.",
            RuntimeWarning, stacklevel=3,
        )


def _drain(fds: list[int], deadline: float, limit: int,
           kill: Callable[[], None]) -> tuple[bytes, bytes, bool, bool]:
    """Read ``fds`` (stdout, stderr) to EOF, keeping ``limit`` bytes; ``kill`` at the deadline."""
    poll = select.poll()
    for fd in fds:
        poll.register(fd, select.POLLIN)
    bufs = {fd: bytearray() for fd in fds}
    open_fds = set(fds)
    timed_out = runaway = False
    while open_fds:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            if timed_out:
                break  # killed 5 s ago and the pipes are still open: give up on them
            timed_out = True
            kill()
            deadline = time.monotonic() + 5.0
            continue
        for fd, _ev in poll.poll(remaining * 1000.0):
            chunk = os.read(fd, 262144)
            if not chunk:
                poll.unregister(fd)
                open_fds.discard(fd)
            elif len(bufs[fd]) < limit:
                bufs[fd] += chunk[: limit - len(bufs[fd])]
            elif not runaway:
                runaway = True
                kill()
    return bytes(bufs[fds[0]]), bytes(bufs[fds[1]]), timed_out, runaway


def _open_output(name: str, control: int) -> int:
    """The host's descriptor of an output file; without access-time updates where allowed
    (each step reads a file the shell has just written, which would dirty its inode)."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags | os.O_NOATIME, dir_fd=control)
    except PermissionError:  # O_NOATIME needs the file's owner (or CAP_FOWNER)
        return os.open(name, flags, dir_fd=control)


def _read_capped(fd: int, offset: int, cap: int) -> tuple[str, int, bool]:
    """An output file from ``offset`` on, as text (head and tail past ``cap``); the offset
    read up to; whether the text was cut."""
    if fd < 0:
        return "", offset, False
    data = _gil_held.pread(fd, cap + 1, offset)
    if len(data) <= cap:
        return data.decode("utf-8", errors="replace"), offset + len(data), False
    size = os.fstat(fd).st_size
    half = cap // 2
    tail = os.pread(fd, half, size - half)
    return join_cut(data[:half], size - offset - 2 * half, tail), size, True
