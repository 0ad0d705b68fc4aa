"""Sandboxes: a backend owns the isolation, a session runs commands in it."""

from taskgym.sandbox._reaper import leftovers, reap
from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec, Session

__all__ = ["BACKENDS", "Backend", "ExecResult", "ResourceUsage", "SandboxSpec", "Session",
           "check_backend_name", "get_backend", "leftovers", "probe_cgroups", "reap",
           "step_calls_implementation"]

BACKENDS = ("local", "docker")
"""The names :func:`get_backend` accepts."""


def check_backend_name(name: str) -> None:
    """Raise :class:`~taskgym.errors.ConfigError` unless ``name`` is one of :data:`BACKENDS`."""
    from taskgym.errors import ConfigError

    if name not in BACKENDS:
        raise ConfigError(f"unknown sandbox backend {name!r}; available: "
                          f"{', '.join(map(repr, BACKENDS))} (or a Backend instance)")


def get_backend(name: str) -> Backend:
    """The backend called ``name`` ("local" or "docker"); raises with install hints when unusable."""
    check_backend_name(name)
    if name == "local":
        from taskgym.sandbox.local import LocalBackend

        return LocalBackend()
    from taskgym.sandbox.docker import DockerBackend

    return DockerBackend.shared()


def probe_cgroups() -> tuple[int, OSError | None]:
    """The cgroup version here, and the error when a cgroup with memory and pids limits
    cannot be created (``None``: it can; sandboxes get exact limits)."""
    import os

    from taskgym.sandbox._cgroups import CgroupLimits, _version

    version = _version()
    try:
        CgroupLimits(f"{os.getpid()}-doctor-probe", 64 << 20, 64).close()
    except OSError as exc:
        return version, exc
    return version, None


def step_calls_implementation() -> str:
    """Which implementation the local sandbox's step calls use: ``"c"`` (the compiled
    helper), else a slower fallback (``"ctypes"`` or ``"os"``)."""
    from taskgym.sandbox._gil_held import IMPLEMENTATION

    return IMPLEMENTATION
