"""``OSError`` turned into :class:`~taskgym.errors.SandboxError` at the backends' boundary.

Every public method of a :class:`~taskgym.sandbox.base.Session` and a backend's ``start`` and
``run`` pass through :func:`guard` (the base classes apply it to each subclass), so a caller
handles sandbox failures by catching ``SandboxError`` alone: running out of descriptors,
processes or memory is a ``SandboxError`` that says which limit and what to do
(:func:`resource_error`); a failed file operation (no such file, the workspace full, no
permission) is a :class:`~taskgym.errors.SandboxFileError`, which is an ``OSError`` too.
"""

from __future__ import annotations

import errno
import functools
import inspect
import resource
from collections.abc import Callable
from typing import Any, TypeVar

from taskgym.errors import HostResourceError, SandboxError, SandboxFileError

__all__ = ["guard", "guard_class", "resource_error", "sandbox_error"]

F = TypeVar("F", bound=Callable[..., Any])
_RESOURCE = frozenset({errno.EMFILE, errno.ENFILE, errno.EAGAIN, errno.ENOMEM})
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
_PATH_FIRST = frozenset({"read_file", "write_file", "open_fifo", "export_workspace"})
"""Methods whose first argument is a path, named in their errors."""


def resource_error(what: str, exc: OSError) -> SandboxError:
    """A :class:`SandboxError` for an ``OSError``, saying which limit was hit and what to do:
    a :class:`HostResourceError` for the host's descriptors, processes or memory."""
    if exc.errno == errno.EMFILE:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return HostResourceError(
            f"{what}: this process has no file descriptor left (RLIMIT_NOFILE {soft}, hard limit "
            f"{hard}; taskgym raised the soft limit to the hard one; each session holds about "
            "10). Close sessions you no longer use, or raise the hard limit before starting "
            "Python (`ulimit -Hn` as root, LimitNOFILE= of a systemd unit, "
            "/etc/security/limits.conf, docker run --ulimit nofile=...).")
    if exc.errno == errno.ENFILE:
        return HostResourceError(f"{what}: the system's file table is full (fs.file-max): {exc}")
    if exc.errno in (errno.EAGAIN, errno.ENOMEM):
        return HostResourceError(f"{what}: out of processes or memory (RLIMIT_NPROC, pids limit or "
                            f"memory): {exc}")
    return SandboxError(f"{what}: {exc}")


def sandbox_error(what: str, exc: OSError) -> SandboxError:
    """The :class:`SandboxError` that stands for ``exc``, raised while doing ``what``."""
    if isinstance(exc, SandboxError):
        return exc
    if exc.errno in _RESOURCE:
        return resource_error(what, exc)
    reason = exc.strerror or str(exc)
    if exc.errno in _FULL:
        reason += (" (the workspace's disk_mb cap, or the destination's file system, is full: "
                   "free space or raise SandboxSpec.disk_mb)")
    return SandboxFileError(f"{what}: {reason}", exc.errno)


def guard(name: str, method: F) -> F:
    """``method`` with any ``OSError`` it raises turned into a :class:`SandboxError`."""
    if getattr(method, "__sandbox_guarded__", False):
        return method

    def converted(exc: OSError, args: tuple[Any, ...]) -> SandboxError:
        target = f" {str(args[0])[:200]!r}" if args and name in _PATH_FIRST else ""
        return sandbox_error(f"{name}{target}", exc)

    guarded: Callable[..., Any]
    if inspect.iscoroutinefunction(method):
        @functools.wraps(method)
        async def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return await method(self, *args, **kwargs)
            except SandboxError:
                raise
            except OSError as exc:
                raise converted(exc, args) from exc
    elif inspect.isgeneratorfunction(method):  # a plan (taskgym.sandbox.shell.plans)
        @functools.wraps(method)
        def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return (yield from method(self, *args, **kwargs))
            except SandboxError:
                raise
            except OSError as exc:
                raise converted(exc, args) from exc
    else:
        @functools.wraps(method)
        def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return method(self, *args, **kwargs)
            except SandboxError:
                raise
            except OSError as exc:
                raise converted(exc, args) from exc

    guarded.__sandbox_guarded__ = True  # type: ignore[attr-defined]
    return guarded  # type: ignore[return-value]


def guard_class(cls: type, names: tuple[str, ...]) -> None:
    """Apply :func:`guard` to the methods ``names`` of ``cls`` (inherited ones included)."""
    for name in names:
        method = getattr(cls, name, None)
        if callable(method) and not getattr(method, "__isabstractmethod__", False):
            setattr(cls, name, guard(name, method))
