"""The floor, done by hand: a bare persistent bash inside a hardened bubblewrap sandbox.

The sandbox has exactly taskgym's bwrap flags (from :meth:`LocalBackend.argv`, seccomp
filter included); what it lacks is everything taskgym adds around it: the cgroup, the
control tmpfs protocol, timeouts, output caps, the tool and env layers. The shell reads
its stdin pipe; a step writes ``echo hi; echo SENTINEL`` and reads stdout until the
sentinel line.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import resource
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.host.seccomp import seccomp_program
from taskgym.sandbox.local import LocalBackend, etc_files

__all__ = [
    "FloorShell",
    "floor_idle_memory",
    "floor_parallel_steps",
    "floor_start_latencies",
    "floor_step_latencies",
    "process_memory",
    "python_cpu",
    "sandbox_cpu",
    "sandbox_pids",
]

SENTINEL = b"SENTINEL"
STEP = b"echo hi; echo " + SENTINEL + b"\n"
_END = b"\n" + SENTINEL + b"\n"


@cache
def _backend() -> LocalBackend:
    return LocalBackend()


@cache
def _seccomp() -> bytes:
    return seccomp_program()


class FloorShell:
    """One bwrap sandbox around ``bash --norc --noprofile`` reading commands from stdin."""

    def __init__(self, spec: SandboxSpec | None = None) -> None:
        spec = spec or SandboxSpec()
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        sec_r, sec_w = os.pipe()
        os.write(sec_w, _seccomp())
        os.close(sec_w)
        etc = etc_files()
        argv = _backend().argv(spec, info_w, block_r, sec_r, etc)
        argv += ["--", "/bin/bash", "--norc", "--noprofile"]
        try:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                pass_fds=(info_w, block_r, sec_r, *etc), start_new_session=True,
            )
        finally:
            for fd in (info_w, block_r, sec_r, *etc):
                os.close(fd)
        os.write(block_w, b"1")  # nothing to set up between clone and exec: release at once
        os.close(block_w)
        self._info_r = info_r
        self._info: dict[str, object] | None = None
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()

    def send(self, script: bytes = STEP) -> bytes:
        """Write ``script`` (which must end by echoing the sentinel); read up to the sentinel."""
        os.write(self._in, script)
        buf = b"\n"
        while not buf.endswith(_END):
            chunk = os.read(self._out, 65536)
            if not chunk:
                raise RuntimeError("the floor shell died")
            buf += chunk
        return buf[1 : -len(_END) + 1]

    def ready(self) -> None:
        """Wait until the shell answers (the end of a start)."""
        self.send(b"echo " + SENTINEL + b"\n")

    def info(self) -> dict[str, object]:
        """bwrap's ``--info-fd`` JSON (``child-pid``, ``pid-namespace``...)."""
        if self._info is None:
            buf = b""
            deadline = time.monotonic() + 10
            poll = select.poll()
            poll.register(self._info_r, select.POLLIN)
            while time.monotonic() < deadline:
                if poll.poll(500):
                    chunk = os.read(self._info_r, 4096)
                    if not chunk:
                        break
                    buf += chunk
                    with contextlib.suppress(ValueError):
                        self._info = json.loads(buf)
                        break
            if self._info is None:
                raise RuntimeError(f"no info from bwrap: {buf!r}")
        return self._info

    def pids(self) -> list[int]:
        """The outer bwrap plus every process of the sandbox's pid namespace."""
        return [self.proc.pid, *sandbox_pids(str(self.info()["pid-namespace"]))]

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        with contextlib.suppress(OSError):
            os.close(self._info_r)


def sandbox_pids(pidns: str) -> list[int]:
    """Host pids of every process in the pid namespace whose inode is ``pidns``."""
    want = f"pid:[{pidns}]"
    found = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{entry.name}/ns/pid") == want:
                    found.append(int(entry.name))
    return sorted(found)


def process_memory(pids: list[int]) -> dict[str, float]:
    """Sum of Pss and Rss (MB) from /proc/<pid>/smaps_rollup over ``pids``."""
    total = {"pss_mb": 0.0, "rss_mb": 0.0, "processes": 0.0}
    for pid in pids:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        total["processes"] += 1
        for line in text.splitlines():
            key, _, rest = line.partition(":")
            if key in ("Pss", "Rss"):
                total[key.lower() + "_mb"] += int(rest.split()[0]) / 1024.0
    return total


def sandbox_cpu(pids: list[int]) -> float:
    """CPU seconds the processes ``pids`` have run so far (/proc/<pid>/schedstat, exact)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    return total / 1e9


def python_cpu() -> float:
    """CPU seconds (user + system, every thread) this Python process has used."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# -- the four floors ---------------------------------------------------------------------
def floor_step_latencies(n: int, warmup: int = 200, shell: FloorShell | None = None) -> list[float]:
    """Seconds per ``echo hi`` round trip through one persistent floor shell."""
    own = shell is None
    sh = shell or FloorShell()
    try:
        if own:
            sh.ready()
        for _ in range(warmup):
            sh.send()
        out = []
        clock = time.perf_counter
        for _ in range(n):
            t0 = clock()
            sh.send()
            out.append(clock() - t0)
        return out
    finally:
        if own:
            sh.close()


def floor_start_latencies(n: int, warmup: int = 3) -> list[float]:
    """Seconds from spawning bwrap to the shell's first answer (teardown not timed)."""
    out = []
    for i in range(n + warmup):
        t0 = time.perf_counter()
        sh = FloorShell()
        sh.ready()
        elapsed = time.perf_counter() - t0
        sh.close()
        if i >= warmup:
            out.append(elapsed)
    return out


def floor_idle_memory() -> dict[str, float]:
    """Pss/Rss (MB) of one idle floor sandbox: outer bwrap, bwrap init, bash."""
    sh = FloorShell()
    try:
        sh.ready()
        sh.send()
        time.sleep(0.05)
        return process_memory(sh.pids())
    finally:
        sh.close()


def timed_in_threads(jobs: list[Callable[[], None]], pids: list[int], total_steps: int,
                     stats: dict[str, float] | None = None) -> float:
    """Run each job in its own thread, all released together; return ``total_steps`` per second.

    When given, ``stats`` receives ``python_cpu_us`` (this process) and ``sandbox_cpu_us``
    (the processes ``pids``) per step.
    """
    barrier = threading.Barrier(len(jobs) + 1)

    def gated(job: Callable[[], None]) -> None:
        barrier.wait()
        job()

    threads = [threading.Thread(target=gated, args=(job,)) for job in jobs]
    for t in threads:
        t.start()
    sb0 = sandbox_cpu(pids)
    barrier.wait()
    t0, py0 = time.perf_counter(), python_cpu()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if stats is not None:
        stats["python_cpu_us"] = (python_cpu() - py0) / total_steps * 1e6
        stats["sandbox_cpu_us"] = (sandbox_cpu(pids) - sb0) / total_steps * 1e6
    return total_steps / elapsed


def floor_parallel_steps(
    n_shells: int, steps_each: int, threads: int, stats: dict[str, float] | None = None
) -> float:
    """Total steps/s with ``n_shells`` floor shells stepped from ``threads`` threads.

    Shell ``i`` belongs to thread ``i % threads``; a thread steps each of its shells
    ``steps_each`` times (round robin). Start-up is not timed. When given, ``stats``
    receives ``python_cpu_us`` and ``sandbox_cpu_us``: CPU microseconds per step.
    """
    shells = [FloorShell() for _ in range(n_shells)]
    try:
        for sh in shells:
            sh.ready()
        groups = [shells[i::threads] for i in range(threads)]
        errors: list[BaseException] = []

        def work(mine: list[FloorShell]) -> None:
            try:
                for _ in range(steps_each):
                    for sh in mine:
                        sh.send()
            except BaseException as exc:  # reported below
                errors.append(exc)

        pids = [p for sh in shells for p in sh.pids()]
        rate = timed_in_threads([functools.partial(work, g) for g in groups], pids,
                                n_shells * steps_each, stats)
        if errors:
            raise errors[0]
        return rate
    finally:
        for sh in shells:
            sh.close()


if __name__ == "__main__":
    import statistics

    steps = floor_step_latencies(2000)
    starts = floor_start_latencies(20)
    print(f"floor step  median {statistics.median(steps) * 1e3:.4f} ms")
    print(f"floor start median {statistics.median(starts) * 1e3:.2f} ms")
    print(f"floor idle memory {floor_idle_memory()}")
    print(f"floor 16 parallel {floor_parallel_steps(16, 200, 16):,.0f} steps/s")
