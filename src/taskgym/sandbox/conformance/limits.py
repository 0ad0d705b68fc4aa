"""Conformance: memory, process, CPU and disk limits hold."""

from __future__ import annotations

import errno
import time

from taskgym.errors import SandboxFileError
from taskgym.sandbox.base import Backend, SandboxSpec
from taskgym.sandbox.conformance.registry import check, expect, expect_raises


@check
def check_memory_limit(backend: Backend) -> None:
    with backend.start(SandboxSpec(memory_mb=128)) as s:
        r = s.exec("python3 -c \"x = bytearray(600 * 2**20); x[::4096] = b'x' * len(x[::4096]); "
                   "print('allocated')\"", timeout=60)
        expect("allocated" not in r.stdout and r.exit_code != 0, f"600 MB fitted in 128 MB: {r}")
        expect(s.exec("echo alive").stdout == "alive\n", "the session died of the memory bomb")


_FORK_BOMB = """
import os, signal, time
children = []
try:
    while len(children) < 500:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
except OSError:
    pass
print(len(children))
for pid in children:
    os.kill(pid, signal.SIGKILL)
"""


@check
def check_process_limit(backend: Backend) -> None:
    with backend.start(SandboxSpec(pids=32)) as s:
        s.write_file("bomb.py", _FORK_BOMB.encode())
        r = s.exec("python3 bomb.py", timeout=60)
        forked = int(r.stdout.strip() or "999")
        # rlimits count every process of the user, so the bound is approximate there
        bound = 32 if s.limits_enforced_by == "cgroup" else 2 * 32
        expect(forked < bound, f"{forked} processes were forked under a limit of 32 "
                                f"(enforced by {s.limits_enforced_by})")
        time.sleep(0.2)
        expect(s.exec("echo alive").stdout == "alive\n", "the session died of the fork bomb")


@check
def check_cpu_quota(backend: Backend) -> None:
    with backend.start(SandboxSpec(cpus=0.25)) as s:
        if not s.cpu_limited:  # the rlimit fallback has no CPU quota (docs/security.md)
            expect(s.limits_enforced_by == "rlimit",
                    f"a sandbox limited by {s.limits_enforced_by} did not apply its CPU quota")
            return
        s.exec("for i in 1 2; do timeout 1.5 sh -c 'while :; do :; done' & done; wait", timeout=30)
        s.stop()
        used = s.usage().cpu_sec
        expect(0 < used < 0.6, f"two busy loops for 1.5 s used {used:.2f} CPU-seconds under "
                                "a quota of 0.25 cores")


@check
def check_disk_cap(backend: Backend) -> None:
    with backend.start(SandboxSpec(disk_mb=8)) as s:
        r = s.exec("dd if=/dev/zero of=big bs=1M count=64 2>&1; du -m big | cut -f1")
        used = int(r.stdout.strip().splitlines()[-1])
        expect(used <= 8 and "No space left" in r.stdout, f"wrote {used} MB under an 8 MB cap")
        exc = expect_raises("write_file past the disk cap",
                            lambda: s.write_file("more", b"x" * (16 << 20)), SandboxFileError)
        expect(isinstance(exc, SandboxFileError)
               and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG),
               f"write_file past the disk cap failed otherwise: {exc}")
