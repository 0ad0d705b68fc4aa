"""One grade forked by a grader zygote (:mod:`taskgym.sandbox.local.zygote`), host side: its
``ready`` (and its pid, from the socket's credentials), its cgroup (the grade's memory, pid and
CPU limits), the workspace copied in through ``/proc/<pid>/root``, and its exit report.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import struct
import time
from pathlib import Path

from taskgym.errors import SandboxError
from taskgym.sandbox.base import Prestarted, ResourceUsage, SandboxSpec
from taskgym.sandbox.host import fs
from taskgym.sandbox.host.cgroups import CgroupLimits, rlimit_fallback
from taskgym.sandbox.host.cleanup import session_name
from taskgym.sandbox.host.os_errors import resource_error

__all__ = ["ZygoteGrade", "await_ready"]

_UCRED = struct.Struct("iII")


def await_ready(host: socket.socket, deadline: float) -> tuple[int, float]:
    """The grade's pid (from the credentials of its ``ready``) and the zygote's CPU to fork it."""
    pid, fork_cpu = 0, 0.0
    while not pid:
        host.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            data, ancillary, _flags, _addr = host.recvmsg(1 << 16, socket.CMSG_SPACE(_UCRED.size))
        except TimeoutError:
            raise SandboxError("the forked grade did not enter its namespaces in time") from None
        if data.startswith(b"forked "):
            fork_cpu = float(data.split()[1])
        elif data == b"ready":
            creds = [d for level, kind, d in ancillary
                     if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS]
            if not creds:
                raise SandboxError("the forked grade's ready carried no credentials")
            pid = _UCRED.unpack(creds[0][:_UCRED.size])[0]
        else:
            why = data.removeprefix(b"error ").decode(errors="replace")[-2000:]
            raise SandboxError(f"the forked grade could not enter its namespaces: {why or 'it exited'}")
    host.settimeout(None)
    return pid, fork_cpu


def _readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` (a pidfd: its process ended) is readable within ``timeout`` seconds
    (poll, never select: descriptors past 1023 are ordinary here)."""
    poll = select.poll()
    poll.register(fd, select.POLLIN)
    return bool(poll.poll(max(0.0, timeout) * 1000.0))


class ZygoteGrade(Prestarted):
    """One grade forked by a zygote, waiting for its go message (pid ``pid`` here)."""

    def __init__(self, channel: socket.socket, pid: int, spec: SandboxSpec, fork_cpu: float) -> None:
        self.spec = spec
        self.pid = pid
        self.fork_cpu = fork_cpu
        self._report = channel  # the child between zygote and grade reports its exit here
        self.pidfd = os.pidfd_open(pid)  # the grade waits for its go: the pid is its own
        self.cgroup: CgroupLimits | None = None
        try:
            self.cgroup = CgroupLimits(session_name(), spec.memory_mb << 20, spec.pids, spec.cpus)
            self.cgroup.add(pid)
        except OSError:
            if self.cgroup is not None:
                self.cgroup.close()
            self.cgroup = None
            rlimit_fallback(pid, spec.memory_mb << 20, spec.pids)
        self.channel = channel.dup()  # what warm_run's go closes

    @property
    def alive(self) -> bool:
        return not _readable(self.pidfd, 0.0)

    @property
    def closed(self) -> bool:
        """Whether it was destroyed (:meth:`close`: the grade is over)."""
        return self.pidfd < 0

    def copy_in(self, seed: Path) -> None:
        try:
            root = os.open(f"/proc/{self.pid}/root{self.spec.workdir}",
                           os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise resource_error("could not reach the grade's workspace", exc) from exc
        try:
            fs.copy_in(seed, root)
        finally:
            os.close(root)

    def finish(self, timeout: float) -> tuple[int, bool, ResourceUsage]:
        report, timed_out = self._wait_report(timeout)
        if timed_out:
            self._kill()
            report, _ = self._wait_report(5.0)
        self._wait_gone(5.0)
        usage = ResourceUsage()
        code = -1
        if report is not None:
            code = int(report["code"])
            usage.cpu_sec = self.fork_cpu + float(report["cpu"])
            usage.peak_memory_bytes = int(report["peak_bytes"])
        if self.cgroup is not None:
            usage.peak_memory_bytes = max(usage.peak_memory_bytes, self.cgroup.peak_memory())
        self.close()
        return code, timed_out, usage

    def _wait_report(self, timeout: float) -> tuple[dict[str, float] | None, bool]:
        """The exit report of the child between zygote and grade (``None`` when it ended
        without one), and whether ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        while True:
            self._report.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                data = self._report.recv(1 << 16)
            except TimeoutError:
                return None, True
            except OSError:
                return None, False
            if not data:
                return None, False
            if data.startswith(b"exit "):
                report: dict[str, float] = json.loads(data[5:])
                return report, False
            if time.monotonic() >= deadline:
                return None, True

    def _kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)  # pid 1: its namespace goes

    def _wait_gone(self, timeout: float) -> None:
        if not _readable(self.pidfd, timeout):
            self._kill()
            _readable(self.pidfd, timeout)

    def close(self) -> None:
        if self.pidfd < 0:
            return
        self._kill()
        self._wait_gone(5.0)
        os.close(self.pidfd)
        self.pidfd = -1
        for sock in (self.channel, self._report):
            with contextlib.suppress(OSError):
                sock.close()
        if self.cgroup is not None:
            self.cgroup.close()
            self.cgroup = None
