"""Sandboxes: a backend owns the isolation, a session runs commands in it."""

from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec, Session
from taskgym.sandbox.config import BackendConfig, DockerConfig, LocalConfig, backend_config, get_backend
from taskgym.sandbox.host.cleanup import leftovers, reap, scratch_dir

__all__ = ["Backend", "BackendConfig", "DockerConfig", "ExecResult", "LocalConfig", "ResourceUsage",
           "SandboxSpec", "Session", "backend_config", "get_backend", "leftovers", "probe_cgroups",
           "reap", "scratch_dir", "step_calls_implementation"]


def probe_cgroups() -> tuple[int, OSError | None]:
    """The cgroup version here, and the error when a cgroup with memory and pids limits
    cannot be created (``None``: it can; sandboxes get exact limits)."""
    import os

    from taskgym.sandbox.host.cgroups import CgroupLimits, cgroup_version

    version = cgroup_version()
    try:
        CgroupLimits(f"{os.getpid()}-doctor-probe", 64 << 20, 64).close()
    except OSError as exc:
        return version, exc
    return version, None


def step_calls_implementation() -> str:
    """Which implementation the local sandbox's step calls use: ``"c"`` (the compiled
    helper), else a slower fallback (``"ctypes"`` or ``"os"``)."""
    from taskgym.sandbox.host.gil_held import IMPLEMENTATION

    return IMPLEMENTATION
