"""Backends raise SandboxError subclasses, never a bare OSError: the base classes guard every
public method of a session and a backend's start and run, whoever writes the backend."""

from __future__ import annotations

import errno
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from taskgym.errors import SandboxError, SandboxFileError, SandboxPathError
from taskgym.sandbox.base import Backend, ExecResult, ResourceUsage, SandboxSpec, Session


class _Files:  # a mixin, as sandbox.host.fs.WorkspaceFiles is for both real sessions
    def read_file(self, path: str, limit: int | None = None) -> bytes:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory")


class _Failing(_Files, Session):
    error: OSError | SandboxError = OSError(errno.EIO, "Input/output error")

    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        raise self.error

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    def export_workspace(self, dest: Path) -> None:
        raise NotADirectoryError(errno.ENOTDIR, "Not a directory")

    def stop(self) -> None:
        raise OSError(errno.EMFILE, "Too many open files")

    def usage(self) -> ResourceUsage:
        raise PermissionError(errno.EACCES, "Permission denied")

    def close(self) -> None:
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    @property
    def alive(self) -> bool:
        return False


class _FailingBackend(Backend):
    name = "failing"

    @classmethod
    def check(cls) -> str | None:
        return None

    def start(self, spec: SandboxSpec, seed: Path | None = None) -> Session:
        raise OSError(errno.ENFILE, "Too many open files in system")

    def run(self, spec: SandboxSpec, argv: list[str], seed: Path | None = None,
            timeout: float | None = None, pass_fds: Sequence[int] = ()
            ) -> tuple[ExecResult, ResourceUsage]:
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "/seed")


@pytest.mark.parametrize(("call", "kind", "words"), [
    (lambda s: s.read_file("notes/a.txt"), SandboxFileError, "read_file 'notes/a.txt'"),
    (lambda s: s.write_file("big.bin", b"x"), SandboxFileError, "disk_mb"),
    (lambda s: s.export_workspace(Path("/x/y")), SandboxFileError, "Not a directory"),
    (lambda s: s.exec("true"), SandboxFileError, "exec: Input/output error"),
    (lambda s: s.stop(), SandboxError, "RLIMIT_NOFILE"),
    (lambda s: s.usage(), SandboxFileError, "Permission denied"),
    (lambda s: s.close(), SandboxError, "out of processes or memory"),
])
def test_every_session_method_raises_a_sandbox_error(call: Any, kind: type[SandboxError],
                                                    words: str) -> None:
    session = _Failing()
    with pytest.raises(kind, match=words) as caught:
        call(session)
    assert isinstance(caught.value, SandboxError)
    assert isinstance(caught.value.__cause__, OSError)  # the original is kept as the cause


def test_a_file_error_keeps_its_errno_and_is_still_an_oserror() -> None:
    with pytest.raises(SandboxFileError) as caught:
        _Failing().read_file("a")
    assert caught.value.errno == errno.ENOENT and isinstance(caught.value, OSError)


def test_sandbox_errors_pass_through_unchanged() -> None:
    session = _Failing()
    refused = SandboxPathError("'x' is a symbolic link; refusing to follow")
    session.error = refused
    with pytest.raises(SandboxPathError) as caught:
        session.exec("true")
    assert caught.value is refused
    already = SandboxFileError("write_file 'x': No space left on device", errno.ENOSPC)
    session.error = already  # an OSError too: it must not be wrapped a second time
    with pytest.raises(SandboxFileError) as again:
        session.exec("true")
    assert again.value is already


def test_backend_start_and_run_raise_sandbox_errors() -> None:
    backend = _FailingBackend()
    with pytest.raises(SandboxError, match="file table is full"):
        backend.start(SandboxSpec())
    with pytest.raises(SandboxFileError, match="No such file"):
        backend.run(SandboxSpec(), ["true"])
