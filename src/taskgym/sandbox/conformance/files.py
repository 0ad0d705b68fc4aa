"""Conformance: the file tools, export and seeding stay inside the workspace."""

from __future__ import annotations

import os
import tempfile
from functools import partial
from pathlib import Path

from taskgym.errors import SandboxError, SandboxFileError, SandboxPathError
from taskgym.sandbox.base import Backend, SandboxSpec
from taskgym.sandbox.conformance.registry import check, expect, expect_raises


@check
def check_file_tools_roundtrip(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.write_file("deep/er/file.txt", "ünïcode\n".encode())
        s.write_file("/app/run.sh", b"#!/bin/sh\necho ran\n", mode=0o755)
        expect(s.read_file("deep/er/file.txt") == "ünïcode\n".encode(), "read back differs")
        expect(s.exec("./run.sh").stdout == "ran\n", "the executable bit was lost")
        expect(s.read_file("/app/deep/er/file.txt", limit=3) == "ün".encode()[:3], "limit ignored")


@check
def check_file_tools_stay_in_the_workspace(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.exec("ln -s /etc/passwd pw; ln -s / rootlink; mkdir d; ln -s /tmp d/t; mkfifo fifo")
        for path in ("pw", "rootlink/etc/passwd", "../etc/passwd", "/etc/passwd", "d/t/x",
                     "fifo"):
            expect_raises(f"read_file({path!r})", partial(s.read_file, path), SandboxPathError)
        for path in ("pw", "rootlink/x", "d/t/x", "../x", "/tmp/x"):
            expect_raises(f"write_file({path!r})", partial(s.write_file, path, b"x"),
                          SandboxPathError)


@check
def check_file_errors_are_sandbox_errors(backend: Backend) -> None:
    """A file operation that fails raises a SandboxError subclass that names the path, never
    a bare OSError: a missing file, a folder where a file is wanted, an export below a host
    file, any use after close."""
    s = backend.start(SandboxSpec())
    try:
        s.exec("mkdir -p folder/inner")
        for path in ("missing", "no/such/dir/x"):
            exc = expect_raises(f"read_file({path!r})", partial(s.read_file, path),
                                SandboxFileError)
            expect(path in str(exc), f"the error does not name {path!r}: {exc}")
        exc = expect_raises("write_file('folder/inner')",
                            lambda: s.write_file("folder/inner", b"x"),
                            (SandboxFileError, SandboxPathError))
        expect("folder/inner" in str(exc), f"the error does not name the path: {exc}")
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "file").write_text("a file, not a folder")
            expect_raises("export_workspace below a file",
                          lambda: s.export_workspace(Path(tmp) / "file" / "out"), SandboxFileError)
    finally:
        s.close()
    expect_raises("read_file after close", lambda: s.read_file("x"), SandboxError)
    expect_raises("write_file after close", lambda: s.write_file("x", b"x"), SandboxError)


@check
def check_export_after_stop(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.exec("mkdir -p a/b && echo 1 > a/b/one && ln -s /etc/shadow link && chmod 700 a")
        s.exec("sleep 100 &")
        s.stop()
        expect(not s.alive, "processes survived stop()")
        with tempfile.TemporaryDirectory() as tmp:
            dest = Path(tmp) / "out"
            s.export_workspace(dest)
            expect((dest / "a/b/one").read_text() == "1\n", "exported content differs")
            expect((dest / "link").is_symlink() and os.readlink(dest / "link") == "/etc/shadow",
                    "a symbolic link was not copied as a link")


@check
def check_seeded_workspace(backend: Backend) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        seed = Path(tmp)
        (seed / "pkg").mkdir()
        (seed / "pkg" / "mod.py").write_text("X = 1\n")
        (seed / "tool.sh").write_text("#!/bin/sh\necho tool\n")
        (seed / "tool.sh").chmod(0o755)
        with backend.start(SandboxSpec(), seed) as s:
            r = s.exec("cat pkg/mod.py; ./tool.sh")
            expect(r.stdout == "X = 1\ntool\n", f"seed not copied: {r}")
