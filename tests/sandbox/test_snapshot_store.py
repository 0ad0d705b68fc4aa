"""Snapshots of tmpfs workspaces kept in memory (sandbox/snapshots/store.py): where they go,
what they count, the fallbacks to the runtime root, their removal and reaping (both
backends: a docker workspace is a tmpfs too)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgym.sandbox import Backend, SandboxSpec, Session
from taskgym.sandbox.host import cleanup
from taskgym.sandbox.host.cleanup import memory_root, runtime_root
from taskgym.sandbox.snapshots import store


@pytest.fixture()
def session(backend: Backend) -> Iterator[Session]:
    with backend.start(SandboxSpec(disk_mb=64)) as started:
        assert started.workspace_storage == "tmpfs"
        assert started.exec("head -c 300000 /dev/urandom > /app/data; mkdir /app/d; "
                            "echo x > /app/d/x").exit_code == 0
        yield started


def ours(root: Path | None) -> list[Path]:
    if root is None:
        return []
    return [p for p in root.iterdir()
            if p.name.startswith(f"{os.getpid()}-") and p.name.endswith("-snapshot")]


def test_a_tmpfs_workspace_is_saved_in_memory_and_counted(backend: Backend,
                                                          session: Session) -> None:
    root = memory_root()
    if root is None:
        pytest.skip("no writable /dev/shm here")
    held = store.memory_held()
    snap = session.snapshot()
    try:
        assert snap.storage == "memory" and snap.folder.parent == root
        assert snap.workspace_bytes == 300_002
        assert snap.memory_bytes == 300_002
        assert store.memory_held() == held + 300_002
        assert (snap.workspace / "data").stat().st_size == 300_000
        assert root.stat().st_mode & 0o777 == 0o700
        with backend.fork(snap) as child:
            assert child.read_file("/app/d/x") == b"x\n"
    finally:
        snap.close()
    snap.close()  # idempotent: counted back once
    assert store.memory_held() == held
    assert not snap.folder.exists() and not ours(root)


@pytest.mark.parametrize("budget", ["0", "1000"])
def test_over_the_budget_it_goes_to_the_runtime_root(session: Session, budget: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Budget off, or too small for this workspace: saved on the runtime root, nothing left
    in memory (a copy cut short there is removed) and nothing counted."""
    monkeypatch.setenv("TASKGYM_SNAPSHOT_MEMORY_BYTES", budget)
    held = store.memory_held()
    snap = session.snapshot()
    try:
        assert snap.storage == "runtime-root" and snap.folder.parent == runtime_root()
        assert (snap.memory_bytes, store.memory_held()) == (0, held)
        assert not ours(memory_root())
        assert (snap.workspace / "data").stat().st_size == 300_000
    finally:
        snap.close()
    assert not snap.folder.exists()


@pytest.fixture()
def small_shm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A 2 MiB tmpfs in place of /dev/shm (root only)."""
    base = tmp_path / "shm"
    base.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=1777", "tmpfs",
                           str(base)], capture_output=True, text=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    monkeypatch.setattr(cleanup, "MEMORY_BASE", base)
    try:
        yield base
    finally:
        subprocess.run(["umount", str(base)], check=False)


def test_half_of_the_memory_folder_stays_free(session: Session, small_shm: Path) -> None:
    """A snapshot goes to memory only within what leaves half of it free: 300 KB fit in
    2 MiB; once something else holds 1.5 MiB there, the next snapshot goes to the runtime
    root, and the filler is untouched."""
    snap = session.snapshot()
    try:
        assert snap.storage == "memory" and snap.folder.is_relative_to(small_shm)
    finally:
        snap.close()
    filler = small_shm / "someone-else"
    filler.write_bytes(os.urandom(1_500_000))
    snap = session.snapshot()
    try:
        assert snap.storage == "runtime-root" and snap.memory_bytes == 0
    finally:
        snap.close()
    assert filler.stat().st_size == 1_500_000
    assert not ours(memory_root())


@pytest.mark.parametrize("plant", ["missing", "symlink", "open-mode", "file"])
def test_no_usable_memory_folder_falls_back(session: Session, tmp_path: Path, plant: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """No memory-backed folder, or its name taken by a link, a folder others may write or
    a file (``/dev/shm`` is writable by everyone): the runtime root is used, and what was
    planted is neither followed nor written."""
    base = tmp_path / "shm"
    target = tmp_path / "elsewhere"
    target.mkdir()
    name = base / f"taskgym-{os.getuid()}"
    if plant != "missing":
        base.mkdir()
        if plant == "symlink":
            name.symlink_to(target)
        elif plant == "open-mode":
            name.mkdir()
            name.chmod(0o777)
        else:
            name.write_text("not a folder")
    monkeypatch.setattr(cleanup, "MEMORY_BASE", base)
    assert memory_root() is None
    snap = session.snapshot()
    try:
        assert snap.storage == "runtime-root" and snap.folder.parent == runtime_root()
        assert not list(target.iterdir())
    finally:
        snap.close()
