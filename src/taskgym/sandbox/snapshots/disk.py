"""Workspaces on disk, for copy-on-write snapshots and forks (local backend).

A local sandbox's workspace is a tmpfs capped at ``disk_mb``; a snapshot or a fork then
copies every byte (tmpfs has no reflinks). When the runtime root
(:func:`~taskgym.sandbox.host.cleanup.runtime_root`) is on **btrfs with quotas enabled** and this
process may set quota limits (``CAP_SYS_ADMIN``: root), each workspace is instead a btrfs
subvolume ``<runtime root>/<owner>-<token>-ws`` whose qgroup is capped at ``disk_mb``
(referenced bytes: a child's shared extents count, as its files would on a tmpfs), bound
into the sandbox as its workspace. Snapshot folders live on the same filesystem, so the
tree copy clones each file (``FICLONE``): a snapshot and a fork cost a walk of the names,
not the bytes, and a child's files share the parent's extents until one side writes.

The cap must hold against the agent: a subvolume the agent made inside its workspace would
have its own, unlimited qgroup, so the seccomp filter refuses the subvolume and snapshot
creation ioctls (:mod:`taskgym.sandbox.host.seccomp`); qgroup and quota ioctls need
``CAP_SYS_ADMIN``, which no sandbox has. Anywhere else (ext4, XFS, tmpfs, no quotas, not
root) workspaces stay tmpfs: :func:`mode` says which and why. XFS has reflinks too, but
caps a folder only with project quotas, which this version does not set (see
docs/architecture.md, "Copy-on-write").

A removed workspace's qgroup cannot go until btrfs has dropped the subvolume (the kernel
answers ``EBUSY``): such qgroups are removed later, at the next workspace made or removed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import threading
from pathlib import Path

from taskgym.sandbox.host.cleanup import runtime_root, session_name

__all__ = ["DiskWorkspace", "mode", "new_workspace"]

_SUBVOL_CREATE = 0x5000940E
"""BTRFS_IOC_SUBVOL_CREATE: _IOW(0x94, 14, struct btrfs_ioctl_vol_args)."""
_SNAP_DESTROY = 0x5000940F
_INO_LOOKUP = 0xD0009412
_QGROUP_CREATE = 0x4010942A
_QGROUP_LIMIT = 0x8030942B
_LIMIT_MAX_RFER = 1
_FIRST_FREE_OBJECTID = 256

_lock = threading.Lock()
_probed: dict[str, str] = {}
"""Runtime root -> ``""`` when on-disk workspaces work there, else why not."""
_stale: list[tuple[str, int]] = []
"""(filesystem folder, qgroup id) of removed workspaces whose qgroup is still to remove."""


def mode() -> tuple[str, str]:
    """``("btrfs", "")`` when new workspaces are capped btrfs subvolumes of the runtime root,
    else ``("tmpfs", why not)``."""
    root = runtime_root()
    with _lock:
        why = _probed.get(str(root))
    if why is None:
        why = _probe(root)
        with _lock:
            _probed[str(root)] = why
    return ("btrfs", "") if not why else ("tmpfs", why)


def new_workspace(disk_mb: int) -> DiskWorkspace | None:
    """A capped workspace subvolume for a new sandbox when :func:`mode` allows, else ``None``
    (a tmpfs then). Raises ``OSError`` when making one fails where it worked before."""
    if mode()[0] != "btrfs":
        return None
    return DiskWorkspace.create(runtime_root(), disk_mb)


def _probe(root: Path) -> str:
    try:
        probe = DiskWorkspace.create(root, 1)
    except OSError as exc:
        if exc.errno in (errno.ENOTTY, errno.EINVAL, errno.EOPNOTSUPP):
            return "the runtime root is not on btrfs"
        if exc.errno == errno.ENOTCONN:
            return "btrfs quotas are off on the runtime root's filesystem (btrfs quota enable)"
        if exc.errno == errno.EPERM:
            return "setting a btrfs quota limit needs root (CAP_SYS_ADMIN)"
        return f"a capped btrfs subvolume could not be made: {exc}"
    probe.remove()
    return ""


class DiskWorkspace:
    """One workspace subvolume and its qgroup limit; :meth:`remove` deletes both."""

    def __init__(self, path: Path, qgroup: int) -> None:
        self.path = path
        self.qgroup = qgroup

    @classmethod
    def create(cls, root: Path, disk_mb: int) -> DiskWorkspace:
        """A new subvolume under ``root`` capped at ``disk_mb`` MiB (raises ``OSError``)."""
        _drop_stale()
        name = f"{session_name()}-ws"
        parent = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.ioctl(parent, _SUBVOL_CREATE, _vol_args(name))
            try:
                fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                             dir_fd=parent)
                try:
                    lookup = bytearray(struct.pack("=QQ", 0, _FIRST_FREE_OBJECTID) + bytes(4080))
                    fcntl.ioctl(fd, _INO_LOOKUP, lookup)
                    qgroup = struct.unpack_from("=Q", lookup)[0]
                    fcntl.ioctl(fd, _QGROUP_LIMIT, bytearray(struct.pack(
                        "=6Q", 0, _LIMIT_MAX_RFER, disk_mb << 20, 0, 0, 0)))
                    os.fchmod(fd, 0o755)
                finally:
                    os.close(fd)
            except BaseException:
                try:
                    fcntl.ioctl(parent, _SNAP_DESTROY, _vol_args(name))
                except OSError:  # not root: rmdir deletes an empty subvolume of one's own
                    with contextlib.suppress(OSError):
                        os.rmdir(name, dir_fd=parent)
                raise
        finally:
            os.close(parent)
        return cls(root / name, qgroup)

    def remove(self) -> None:
        """Delete the subvolume (whatever it holds) and, once btrfs lets it, its qgroup."""
        parent = os.open(self.path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.ioctl(parent, _SNAP_DESTROY, _vol_args(self.path.name))
        except FileNotFoundError:
            pass
        finally:
            os.close(parent)
        with _lock:
            _stale.append((str(self.path.parent), self.qgroup))
        _drop_stale()


def _drop_stale() -> None:
    with _lock:
        pending, _stale[:] = list(_stale), []
    keep = []
    for folder, qgroup in pending:
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            continue  # the filesystem is gone
        try:
            fcntl.ioctl(fd, _QGROUP_CREATE, bytearray(struct.pack("=QQ", 0, qgroup)))
        except OSError as exc:
            if exc.errno == errno.EBUSY:  # the subvolume is not dropped yet
                keep.append((folder, qgroup))
        finally:
            os.close(fd)
    with _lock:
        _stale.extend(keep)


def _vol_args(name: str) -> bytearray:
    """``struct btrfs_ioctl_vol_args``: an unused descriptor and a name of up to 4087 bytes."""
    return bytearray(struct.pack("=q", 0) + os.fsencode(name).ljust(4088, b"\0"))
