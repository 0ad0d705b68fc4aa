"""Where a snapshot's copy of the workspace is kept: in memory, or on the runtime root.

A snapshot of a workspace on the runtime root's filesystem
(:func:`~taskgym.sandbox.host.cleanup.runtime_root`: the capped btrfs subvolumes of
:mod:`taskgym.sandbox.snapshots.disk`) is saved there, where its files are clones. A tmpfs workspace
(the default, locally and on docker) is copied in full wherever the snapshot goes, and a copy
into memory is several times cheaper than one onto a disk filesystem (each file created on
ext4 costs a journal entry): such a snapshot is saved under
:func:`~taskgym.sandbox.host.cleanup.memory_root` (``/dev/shm/taskgym-<uid>``), within a budget:

- this process's snapshots hold at most ``TASKGYM_SNAPSHOT_MEMORY_BYTES`` bytes of file data
  in memory (default :data:`DEFAULT_MEMORY_BYTES`; ``0`` keeps every snapshot on the runtime
  root), counted by :func:`memory_held` and given back when a snapshot is closed;
- a snapshot leaves at least half of ``/dev/shm`` free (other programs use it too);
- one that does not fit, or finds ``/dev/shm`` full or missing, is saved on the runtime root
  instead (:attr:`Saved.storage` says where).

Wherever it goes, a copy writes at most the workspace's cap (``disk_mb``) of data: more could
not be restored into a workspace of the same spec, and it bounds what the agent can make the
host store (a file hard-linked many times is copied once per link). Snapshot folders are named
for the owning process, in either place, so the reaper removes those of a crashed process.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

from taskgym.errors import SandboxError
from taskgym.sandbox.config import whole_number_env
from taskgym.sandbox.host import tree
from taskgym.sandbox.host.cleanup import memory_root, runtime_root, session_name

__all__ = ["DEFAULT_MEMORY_BYTES", "Saved", "memory_budget", "memory_held", "release", "save"]

DEFAULT_MEMORY_BYTES = 1 << 30
"""The default bound on the bytes of this process's snapshots kept in memory: 1 GiB."""

_lock = threading.Lock()
_held = 0


@dataclass(frozen=True, slots=True)
class Saved:
    """A workspace copied into a new snapshot folder."""

    folder: Path
    """The snapshot's folder (0700); the copy is its ``ws`` subfolder."""
    size: int
    """Bytes of file data in the copy (cloned files count their size)."""
    stats: tree.CopyStats
    storage: str
    """``"memory"`` (under :func:`~taskgym.sandbox.host.cleanup.memory_root`) or
    ``"runtime-root"``."""
    memory_bytes: int
    """What it counts in :func:`memory_held` (0 on the runtime root): give it back with
    :func:`release` once the folder is deleted."""


def memory_budget() -> int:
    """``TASKGYM_SNAPSHOT_MEMORY_BYTES``, else :data:`DEFAULT_MEMORY_BYTES`."""
    return whole_number_env("TASKGYM_SNAPSHOT_MEMORY_BYTES", DEFAULT_MEMORY_BYTES,
                            hint=" (bytes; 0 keeps snapshots on the runtime root)")


def memory_held() -> int:
    """Bytes of file data this process's open snapshots hold in memory."""
    with _lock:
        return _held


def release(memory_bytes: int) -> None:
    """Give back what a deleted snapshot folder counted (:attr:`Saved.memory_bytes`)."""
    global _held
    with _lock:
        _held -= memory_bytes


def save(workspace_fd: int, cap_bytes: int, tmpfs: bool) -> Saved:
    """Copy the workspace folder ``workspace_fd`` into a new snapshot folder: in memory when
    it is a ``tmpfs`` and the module's rules allow, else on the runtime root. Raises
    :class:`SandboxError` when the copy fails or would write over ``cap_bytes`` of data;
    nothing is left behind then."""
    memory = memory_root() if tmpfs and memory_budget() > 0 else None
    if memory is not None:
        saved = _save_in_memory(memory, workspace_fd, cap_bytes)
        if saved is not None:
            return saved
    try:
        folder, size, stats = _copy_into(runtime_root(), workspace_fd, cap_bytes)
    except tree.TreeTooBig:
        raise SandboxError(f"could not save the workspace: its files add up to over its cap "
                           f"of {cap_bytes >> 20} MiB (a file with many hard links is saved "
                           "once per link); remove some before taking a snapshot") from None
    except OSError as exc:
        raise SandboxError(f"could not save the workspace: {exc}") from exc
    return Saved(folder, size, stats, "runtime-root", 0)


def _save_in_memory(root: Path, workspace_fd: int, cap_bytes: int) -> Saved | None:
    """The copy into ``root`` within what :func:`_reserve` grants, the rest of the grant
    given back; ``None`` (all given back) when it cannot be made there: no room, over the
    grant, ``/dev/shm`` full (an error of the workspace itself shows again in the copy onto
    the runtime root)."""
    grant = _reserve(root, cap_bytes)
    if grant == 0:
        return None
    try:
        folder, size, stats = _copy_into(root, workspace_fd, grant)
    except (tree.TreeTooBig, OSError):
        release(grant)
        return None
    except BaseException:
        release(grant)
        raise
    release(grant - stats.written)
    return Saved(folder, size, stats, "memory", stats.written)


def _reserve(root: Path, cap_bytes: int) -> int:
    """Reserve room in memory for a copy of at most ``cap_bytes``: what the budget and the
    free half of ``root``'s filesystem allow, up to ``cap_bytes``; 0 when none."""
    global _held
    try:
        fs = os.statvfs(root)
    except OSError:
        return 0
    spare = fs.f_bavail * fs.f_frsize - fs.f_blocks * fs.f_frsize // 2
    with _lock:
        grant = max(0, min(cap_bytes, memory_budget() - _held, spare))
        _held += grant
    return grant


def _copy_into(root: Path, workspace_fd: int, limit: int) -> tuple[Path, int, tree.CopyStats]:
    """A new snapshot folder under ``root`` holding a copy of the workspace (``limit``: the
    most bytes of data written); on any failure nothing of it is left."""
    folder = root / f"{session_name()}-snapshot"
    folder.mkdir(mode=0o700)
    try:
        (folder / "ws").mkdir(mode=0o700)
        dst = os.open(folder / "ws", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        stats = tree.CopyStats(limit=limit)
        try:
            size = tree.copy_tree(workspace_fd, dst, stats)
        finally:
            os.close(dst)
    except BaseException:
        with contextlib.suppress(OSError):
            shutil.rmtree(folder)
        raise
    return folder, size, stats
