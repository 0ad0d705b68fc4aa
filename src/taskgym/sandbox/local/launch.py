"""Starting one bubblewrap sandbox: limits entered before anything runs, and the process tree
of a started sandbox (:class:`Launched`). Its command line is built by
:mod:`taskgym.sandbox.local.command_line`; the backend that calls this is
:mod:`taskgym.sandbox.local.backend`."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import select
import signal
import subprocess
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from taskgym.errors import SandboxError
from taskgym.sandbox.base import ResourceUsage, SandboxSpec
from taskgym.sandbox.host.cgroups import CgroupLimits, rlimit_fallback
from taskgym.sandbox.host.cleanup import session_name
from taskgym.sandbox.host.os_errors import resource_error
from taskgym.sandbox.host.procs import start_tick, wait_gone
from taskgym.sandbox.host.seccomp import nested_seccomp_program, seccomp_program
from taskgym.sandbox.local.command_line import bwrap_argv, etc_files, memfd
from taskgym.sandbox.shell.commands import STATUS_FD, encode_text

__all__ = ["Launched", "launch", "raise_open_files_limit"]

SHELL_NOFILE = 256
"""The soft RLIMIT_NOFILE a sandbox's shell needs: it writes its status lines on descriptor 251
(``STATUS_FD``), and bash keeps its script on the highest descriptor below its limit (at most
255), which must not be 251."""
SHELL_NEEDS = (f"the sandbox's shell reports on descriptor {STATUS_FD} and reads its input on "
                f"the highest one below the limit, so it needs a limit of at least {SHELL_NOFILE}")



def launch(
    bwrap: str, spec: SandboxSpec, command: list[str], pass_fds: Sequence[int] = (),
    stdout: int | None = None, workspace: str | None = None, nested: bool = False,
) -> Launched:
    """Start the bubblewrap executable ``bwrap`` around ``command`` with limits in place before
    it runs; its stdout is ``stdout`` when given, else a pipe; its workspace the host folder
    ``workspace`` when given, else a tmpfs. ``nested``: a grader zygote's sandbox, which may
    nest namespaces (a looser seccomp filter; :mod:`taskgym.sandbox.local.zygote`)."""
    name = session_name()  # reads /proc: before any descriptor is opened here
    opened: list[int] = []
    try:
        for _ in range(3):
            opened += os.pipe()
        info_r, info_w, block_r, block_w, seccomp_r, seccomp_w = opened
        os.write(seccomp_w, nested_seccomp_program() if nested else seccomp_program())
        os.close(seccomp_w)
        opened.remove(seccomp_w)
        for arg in command:
            encode_text(arg, "the command")
        etc = etc_files()
        opened += etc
        _, *options = bwrap_argv(bwrap, spec, info_w, block_r, seccomp_r, etc, workspace, nested)
        args_fd = memfd(b"".join(encode_text(option, "a sandbox option") + b"\0"
                                  for option in options))
    except BaseException as exc:
        for fd in opened:
            os.close(fd)
        if isinstance(exc, OSError):
            raise resource_error("could not set up a sandbox", exc) from exc
        raise
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
        raise resource_error("could not start bwrap", exc) from exc
    for fd in (info_w, block_r, seccomp_r, args_fd, *etc):
        os.close(fd)
    init_pid = 0
    cgroup: CgroupLimits | None = None
    try:
        info = _read_info(info_r, proc)
        init_pid = int(str(info["child-pid"]))
        memory = spec.memory_mb << 20
        try:
            cgroup = CgroupLimits(name, memory, spec.pids, spec.cpus)
            cgroup.add(init_pid)
        except OSError as exc:
            if cgroup is not None:
                cgroup.close()
            cgroup = None
            _warn_no_cgroup(exc)
            rlimit_fallback(init_pid, memory, spec.pids)
        _descriptors_for_the_shell(init_pid)
        os.write(block_w, b"1")
        # reads /proc (a descriptor): inside the try, so that a failure stops the sandbox
        return Launched(proc, init_pid, str(info.get("pid-namespace", "")), cgroup)
    except BaseException:
        for pid in (init_pid, proc.pid):
            if pid > 0:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        if cgroup is not None:
            cgroup.close()
        raise
    finally:
        os.close(info_r)
        os.close(block_w)

class Launched:
    """One bwrap process tree and its cgroup."""

    def __init__(self, proc: subprocess.Popen[bytes], init_pid: int, pidns: str,
                 cgroup: CgroupLimits | None) -> None:
        self.proc = proc
        self.init_pid = init_pid
        self.pidns = pidns  # the pid namespace's inode number, as bwrap reported it
        self.cgroup = cgroup
        self.init_start = start_tick(init_pid)  # bwrap's pid 1 of the sandbox
        self.rusage: resource.struct_rusage | None = None
        self.killed = False
        """Whether :meth:`kill` was called (a timeout, runaway output, a reap's grace)."""

    def kill(self) -> None:
        self.killed = True
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
            # the cgroup's peak alone: a child's ru_maxrss counts the controller's own resident
            # memory, shared from the fork until bwrap's exec (a controller of 1.2 GB made every
            # sandbox of 1 GB look full, and so every grade's setup failure the policy's); where
            # the kernel keeps no peak (cgroup v2 before Linux 5.19), the rusage stays
            usage.peak_memory_bytes = self.cgroup.peak_memory() or usage.peak_memory_bytes
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

def raise_open_files_limit() -> int:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit (each live session holds
    about ten descriptors, and the soft limit is often 1,024); the soft limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        target = hard
        if hard == resource.RLIM_INFINITY:  # the kernel caps it at fs.nr_open
            try:
                target = int(Path("/proc/sys/fs/nr_open").read_text())
            except (OSError, ValueError):
                target = 1 << 20
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, target), hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]

def _descriptors_for_the_shell(init_pid: int) -> None:
    """The sandbox inherits this process's RLIMIT_NOFILE, which a caller may have lowered
    since the backend raised it: give the sandbox the soft limit its shell needs."""
    soft, hard = resource.prlimit(init_pid, resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < SHELL_NOFILE:
        if hard != resource.RLIM_INFINITY and hard < SHELL_NOFILE:
            raise SandboxError(f"RLIMIT_NOFILE's hard limit is {hard}: {SHELL_NEEDS}")
        wanted = 1024 if hard == resource.RLIM_INFINITY else min(1024, hard)
        resource.prlimit(init_pid, resource.RLIMIT_NOFILE, (wanted, hard))


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
