"""The runtime root is configurable (set_runtime_root, TASKGYM_RUNTIME_ROOT), snapshots land
there, and where no reflink is possible the copy is the documented full one, said so."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgym.errors import ConfigError
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.host import tree
from taskgym.sandbox.host.cleanup import runtime_root, set_runtime_root
from taskgym.sandbox.local import LocalBackend
from taskgym.sandbox.snapshots import disk


@pytest.fixture()
def own_root(tmp_path: Path) -> Iterator[Path]:
    set_runtime_root(tmp_path)
    try:
        yield tmp_path
    finally:
        set_runtime_root(None)


def test_setting_and_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    default = runtime_root()
    monkeypatch.setenv("TASKGYM_RUNTIME_ROOT", str(tmp_path / "env"))
    (tmp_path / "env").mkdir()
    assert runtime_root() == tmp_path / "env" / f"taskgym-{os.getuid()}"
    set_runtime_root(tmp_path)  # the setting wins over the variable
    try:
        assert runtime_root() == tmp_path / f"taskgym-{os.getuid()}"
        assert runtime_root().stat().st_mode & 0o777 == 0o700
    finally:
        set_runtime_root(None)
    monkeypatch.delenv("TASKGYM_RUNTIME_ROOT")
    assert runtime_root() == default
    with pytest.raises(ConfigError, match="not an existing folder"):
        set_runtime_root(tmp_path / "missing")


@pytest.mark.sandbox
def test_snapshots_go_under_the_root_and_say_how(own_root: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TASKGYM_SNAPSHOT_MEMORY_BYTES", "0")  # else a tmpfs's go to memory
    with LocalBackend().start(SandboxSpec()) as session:
        assert session.workspace_storage == ("btrfs" if disk.mode()[0] == "btrfs" else "tmpfs")
        session.exec("echo data > /app/f")
        snap = session.snapshot()
        try:
            assert snap.folder.parent == own_root / f"taskgym-{os.getuid()}"
            assert (snap.storage, snap.memory_bytes) == ("runtime-root", 0)
            if session.workspace_storage == "tmpfs":  # a tmpfs has no reflinks: a full copy
                assert (snap.copy_method, snap.copy_note) == ("copy", "EXDEV")
            with LocalBackend().fork(snap) as child:
                assert child.read_file("/app/f") == b"data\n"
        finally:
            snap.close()
    assert not snap.folder.exists()


def test_the_tree_copy_falls_back_to_a_full_copy(tmp_path: Path) -> None:
    """Within one filesystem without reflinks (ext4, tmpfs) every file is copied, and the
    stats say why no clone happened."""
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "d").mkdir(parents=True)
    (src / "d" / "f").write_bytes(b"x" * 100_000)
    dst.mkdir()
    fds = [os.open(p, os.O_RDONLY | os.O_DIRECTORY) for p in (src, dst)]
    stats = tree.CopyStats()
    try:
        assert tree.copy_tree(fds[0], fds[1], stats) == 100_000
    finally:
        for fd in fds:
            os.close(fd)
    assert (dst / "d" / "f").read_bytes() == b"x" * 100_000
    if stats.method == "copy":
        assert stats.clone_error in ("EOPNOTSUPP", "EXDEV", "EINVAL", "ENOTTY")
    else:  # this folder is on a filesystem with reflinks
        assert stats.method == "reflink" and not stats.clone_error
