"""Memory, process-count and CPU limits through cgroups (v1 or v2), or rlimits as a fallback.

One cgroup per sandbox, named ``<owner pid>-<token>`` under a ``taskgym`` parent, so the
reaper can tell whose it is. Root gets it under the hierarchy root; an ordinary user on
cgroup v2 gets it under the part of the tree systemd delegated to them, when it did.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import time
import warnings
from pathlib import Path

__all__ = ["CgroupLimits", "cgroup_parents", "remove_cgroup", "rlimit_fallback"]

_ROOT = Path("/sys/fs/cgroup")
CPU_PERIOD_US = 100_000
"""The CFS period of a CPU quota: ``cpus`` cores may run ``cpus * period`` per period."""


def cgroup_version() -> int:
    """The cgroup version this host mounts: 2 (unified) or 1."""
    return 2 if (_ROOT / "cgroup.controllers").exists() else 1


def _own_cgroup() -> str | None:
    """This process's cgroup v2 path (``/user.slice/.../app.slice/x.scope``), if known."""
    try:
        return Path("/proc/self/cgroup").read_text().strip().splitlines()[-1].split("::", 1)[1]
    except (OSError, IndexError):
        return None


def _v2_base() -> Path | None:
    """A cgroup v2 folder this process may create children in, with memory and pids."""
    if os.geteuid() == 0:
        base = _ROOT / "taskgym"
    else:
        own = _own_cgroup()
        if own is None:
            return None
        parts = Path(own).parts
        service = [i for i, p in enumerate(parts) if p.startswith("user@") and p.endswith(".service")]
        if not service:
            return None
        base = _ROOT.joinpath(*parts[1 : service[0] + 1]) / "taskgym.slice"
    try:
        base.mkdir(exist_ok=True)
        enabled = (base.parent / "cgroup.subtree_control").read_text().split()
        for ctrl in ("memory", "pids"):
            if ctrl not in enabled:
                (base.parent / "cgroup.subtree_control").write_text(f"+{ctrl}")
        (base / "cgroup.subtree_control").write_text("+memory +pids")
        with contextlib.suppress(OSError):  # CPU quotas only where the cpu controller is delegated
            if "cpu" not in enabled:
                (base.parent / "cgroup.subtree_control").write_text("+cpu")
            (base / "cgroup.subtree_control").write_text("+cpu")
        return base
    except OSError:
        return None


def cgroup_parents() -> list[Path]:
    """The ``taskgym`` parent folders that hold this user's sandbox cgroups."""
    if cgroup_version() == 2:
        base = _v2_base()
        return [base] if base else []
    return [_ROOT / c / "taskgym" for c in ("memory", "pids", "cpuacct", "cpu")]


class CgroupLimits:
    """A cgroup (v1: one per controller) holding one sandbox's processes."""

    def __init__(self, name: str, memory_bytes: int, pids: int, cpus: float | None = None) -> None:
        self.dirs: list[Path] = []
        self.version = cgroup_version()
        self.cpu_limited = False
        """Whether ``cpus`` is enforced (it needs the cpu controller)."""
        quota = None if cpus is None else max(1000, round(cpus * CPU_PERIOD_US))
        if self.version == 2:
            base = _v2_base()
            if base is None:
                raise OSError("no writable cgroup v2 subtree with memory and pids delegated")
            cg = base / name
            cg.mkdir()
            self.dirs.append(cg)
            (cg / "memory.max").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):
                (cg / "memory.swap.max").write_text("0")
            (cg / "pids.max").write_text(str(pids))
            if quota is not None:
                with contextlib.suppress(OSError):
                    (cg / "cpu.max").write_text(f"{quota} {CPU_PERIOD_US}")
                    self.cpu_limited = True
        else:
            mem = _ROOT / "memory" / "taskgym" / name
            pid = _ROOT / "pids" / "taskgym" / name
            for d in (mem, pid):
                d.mkdir(parents=True)
                self.dirs.append(d)
            acct = _ROOT / "cpuacct" / "taskgym" / name
            with contextlib.suppress(OSError):  # CPU accounting is optional
                acct.mkdir(parents=True)
                self.dirs.append(acct)
            (mem / "memory.limit_in_bytes").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):  # only where swap accounting is on
                (mem / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            (pid / "pids.max").write_text(str(pids))
            if quota is not None:
                self._v1_cpu_quota(name, quota)

    def _v1_cpu_quota(self, name: str, quota: int) -> None:
        cpu = _ROOT / "cpu" / "taskgym" / name  # often the same folder as cpuacct's (cpu,cpuacct)
        with contextlib.suppress(OSError):
            if not cpu.is_dir():
                cpu.mkdir(parents=True)
            if all(not cpu.samefile(d) for d in self.dirs if d.exists()):
                self.dirs.append(cpu)
            (cpu / "cpu.cfs_period_us").write_text(str(CPU_PERIOD_US))
            (cpu / "cpu.cfs_quota_us").write_text(str(quota))
            self.cpu_limited = True

    def add(self, pid: int) -> None:
        for d in self.dirs:
            (d / "cgroup.procs").write_text(str(pid))

    def peak_memory(self) -> int:
        names = ("memory.peak",) if self.version == 2 else ("memory.max_usage_in_bytes",)
        for d in self.dirs:
            for name in names:
                with contextlib.suppress(OSError, ValueError):
                    return int((d / name).read_text())
        return 0

    def cpu_seconds(self) -> float | None:
        """CPU time used by every process that ever ran in the cgroup, if accounted."""
        for d in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                if self.version == 2:
                    for line in (d / "cpu.stat").read_text().splitlines():
                        if line.startswith("usage_usec "):
                            return int(line.split()[1]) / 1e6
                elif (d / "cpuacct.usage").exists():
                    return int((d / "cpuacct.usage").read_text()) / 1e9
        return None

    def close(self) -> None:
        for d in self.dirs:
            remove_cgroup(d)
        self.dirs = []


def remove_cgroup(path: Path, wait: float = 2.0) -> None:
    """Kill what is left in a cgroup and remove it."""
    deadline = time.monotonic() + wait
    while True:
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            try:
                pids = (path / "cgroup.procs").read_text().split()
            except OSError:
                pids = []
            for p in pids:
                with contextlib.suppress(OSError):
                    os.kill(int(p), signal.SIGKILL)
            if time.monotonic() > deadline:
                warnings.warn(f"taskgym: could not remove cgroup {path}", RuntimeWarning,
                              stacklevel=2)
                return
            time.sleep(0.005)


def rlimit_fallback(pid: int, memory_bytes: int, pids: int) -> None:
    """Per-process limits for machines without usable cgroups (weaker: see the security docs)."""
    resource.prlimit(pid, resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    with contextlib.suppress(OSError, ValueError):
        # RLIMIT_NPROC counts every process of the user, so allow what runs now plus ``pids``
        uid = os.getuid()
        current = 0
        for entry in Path("/proc").iterdir():
            with contextlib.suppress(OSError):
                if entry.name.isdigit() and entry.stat().st_uid == uid:
                    current += 1
        resource.prlimit(pid, resource.RLIMIT_NPROC, (current + pids, current + pids))
