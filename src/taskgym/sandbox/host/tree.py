"""Exact copies of a workspace tree by directory descriptor, for snapshots.

Unlike :mod:`taskgym.sandbox.host.fs` (file tools, seeds), these keep everything a snapshot
must give back: modes (``000`` folders included), owners where the caller may set them,
modification times, symbolic links as links, empty folders. Nothing is ever followed: each
name is opened with ``O_NOFOLLOW`` relative to its parent's descriptor. File data moves
in the kernel, one pass, no Python buffers: a whole file is first cloned (``FICLONE``: the
copy shares the source's extents, copy-on-write, where both sides are on one filesystem that
has reflinks, such as XFS made with ``reflink=1`` or btrfs), else ``copy_file_range``, else
``sendfile``; a sparse file's holes stay holes (only its data is copied: ``SEEK_DATA``), so
a terabyte-sized empty file costs nothing. :class:`CopyStats` counts which way each file went
and may cap the bytes a copy writes (:attr:`CopyStats.limit`, raising :class:`TreeTooBig`).
Hard links are copied as separate files (the cap bounds what that multiplies); fifos,
sockets and devices are skipped.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field

__all__ = ["CopyStats", "TreeTooBig", "clear_tree", "copy_tree", "remove_tree", "tree_bytes"]

FICLONE = 0x40049409
"""``ioctl(dst, FICLONE, src)``: make ``dst`` share all of ``src``'s extents (linux/fs.h)."""

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

_range_ok = True
"""Whether ``copy_file_range`` has worked between the filesystems met so far."""


class TreeTooBig(Exception):
    """A copy would write more than its :attr:`CopyStats.limit` bytes of data."""


@dataclass(slots=True)
class CopyStats:
    """How a tree copy moved its files' data."""

    cloned: int = 0
    """Files cloned whole (``FICLONE``): they share the source's extents until written."""
    copied: int = 0
    """Files whose data was copied (``copy_file_range`` or ``sendfile``)."""
    clone_error: str = ""
    """Why the first clone that failed did (``EXDEV``: two filesystems; ``EOPNOTSUPP``: no
    reflinks there), empty when none failed."""
    limit: int | None = None
    """The most bytes of data the copy may write (clones write none), else
    :class:`TreeTooBig` is raised before writing more; ``None``: no cap."""
    written: int = 0
    """Bytes of data written so far (copied, not cloned)."""
    owner: tuple[int, int] = field(default_factory=lambda: (os.geteuid(), os.getegid()))
    """Who the copy's new files belong to (they are given the source's owner when not)."""

    @property
    def method(self) -> str:
        """``"reflink"`` (every file cloned), ``"copy"`` (none), ``"mixed"``, or ``"empty"``."""
        if self.cloned and self.copied:
            return "mixed"
        return "reflink" if self.cloned else "copy" if self.copied else "empty"


def copy_tree(src_fd: int, dst_fd: int, stats: CopyStats | None = None) -> int:
    """Copy what the folder ``src_fd`` holds into the empty folder ``dst_fd``; return the
    bytes of file data copied (cloned files count too), recording in ``stats`` how. The top
    folders' own modes are left alone."""
    stats = CopyStats() if stats is None else stats
    total = 0
    with _owner_access(src_fd), _owner_access(dst_fd):
        for entry in _listing(src_fd):  # the listing's types; each opened one is checked by fstat
            name = entry.name
            if entry.is_dir(follow_symlinks=False):
                sub_src = _open_dir(name, src_fd)
                try:
                    st = os.fstat(sub_src)
                    os.mkdir(name, 0o700, dir_fd=dst_fd)
                    sub_dst = os.open(name, _DIR, dir_fd=dst_fd)
                    try:
                        total += copy_tree(sub_src, sub_dst, stats)
                        _finish(sub_dst, st, stats)
                    finally:
                        os.close(sub_dst)
                finally:
                    os.close(sub_src)
            elif entry.is_symlink():
                st = entry.stat(follow_symlinks=False)
                os.symlink(os.readlink(name, dir_fd=src_fd), name, dir_fd=dst_fd)
                with contextlib.suppress(OSError):
                    os.chown(name, st.st_uid, st.st_gid, dir_fd=dst_fd, follow_symlinks=False)
                with contextlib.suppress(OSError):
                    os.utime(name, ns=(st.st_atime_ns, st.st_mtime_ns), dir_fd=dst_fd,
                             follow_symlinks=False)
            elif entry.is_file(follow_symlinks=False):
                total += _copy_file(name, src_fd, dst_fd, stats)
    return total


def tree_bytes(fd: int) -> int:
    """Bytes of regular-file data under the folder ``fd``."""
    total = 0
    with _owner_access(fd):
        for entry in _listing(fd):
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
            elif stat.S_ISDIR(st.st_mode):
                sub = _open_dir(entry.name, fd, st.st_mode)
                try:
                    total += tree_bytes(sub)
                finally:
                    os.close(sub)
    return total


def clear_tree(fd: int) -> None:
    """Remove everything under the folder ``fd`` (the folder itself stays).

    The walk holds one descriptor at a time and no Python frame per level (it climbs back
    through ``..``), so a tree of any depth is removed: an agent's folders nested thousands
    deep must not crash whoever cleans up after it."""
    with _owner_access(fd):
        here = os.dup(fd)
        above: list[tuple[str, list[str]]] = []  # (this folder's name, its siblings left)
        try:
            left = _clear_files(here)
            while True:
                if left:
                    name = left.pop()
                    with contextlib.suppress(OSError):
                        os.chmod(name, 0o700, dir_fd=here, follow_symlinks=False)
                    sub = os.open(name, _DIR, dir_fd=here)
                    os.close(here)
                    here = sub
                    above.append((name, left))
                    left = _clear_files(here)
                elif above:
                    name, left = above.pop()
                    parent = os.open("..", _DIR, dir_fd=here)
                    os.close(here)
                    here = parent
                    os.rmdir(name, dir_fd=here)
                else:
                    return
        finally:
            os.close(here)


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove the folder ``path`` and everything in it, whatever its depth (see
    :func:`clear_tree`); a link at ``path`` is removed, never followed."""
    try:
        fd = os.open(path, _DIR)
    except OSError as exc:
        if exc.errno in (errno.ENOTDIR, errno.ELOOP):
            os.unlink(path)
            return
        raise
    try:
        clear_tree(fd)
    finally:
        os.close(fd)
    os.rmdir(path)


def _clear_files(fd: int) -> list[str]:
    """Unlink every entry of the folder ``fd`` but its folders, whose names it returns."""
    folders = []
    for entry in _listing(fd):
        if entry.is_dir(follow_symlinks=False):
            folders.append(entry.name)
        else:
            os.unlink(entry.name, dir_fd=fd)
    return folders


def _listing(fd: int) -> list[os.DirEntry[str]]:
    """The entries of the folder ``fd``, read from its start. The rewind matters: a long-lived
    descriptor (a session's workspace) may have been read to its end before, and btrfs shows
    a descriptor only the entries that existed when it was opened or last rewound."""
    os.lseek(fd, 0, os.SEEK_SET)
    with os.scandir(fd) as listing:
        return list(listing)


@contextlib.contextmanager
def _owner_access(fd: int) -> Iterator[None]:
    """While the block runs, the folder ``fd`` lets this process list, enter and change it:
    one its owner (this process, not root) locked, say with mode 000, gets ``u+rwx`` back
    for the block, then its own mode. Root needs none of this: it passes every mode."""
    if os.geteuid() == 0:
        yield
        return
    st = os.fstat(fd)
    if st.st_mode & 0o700 == 0o700 or st.st_uid != os.geteuid():
        yield
        return
    os.fchmod(fd, stat.S_IMODE(st.st_mode) | 0o700)
    try:
        yield
    finally:
        os.fchmod(fd, stat.S_IMODE(st.st_mode))


def _open_dir(name: str, parent: int, mode: int | None = None) -> int:
    try:
        return os.open(name, _DIR, dir_fd=parent)
    except PermissionError:  # a folder the agent made unreadable: we may, as its owner
        if mode is None:
            mode = os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode
        os.chmod(name, stat.S_IMODE(mode) | 0o700, dir_fd=parent, follow_symlinks=False)
        try:
            return os.open(name, _DIR, dir_fd=parent)
        finally:
            os.chmod(name, stat.S_IMODE(mode), dir_fd=parent, follow_symlinks=False)


def _copy_file(name: str, src_dir: int, dst_dir: int, stats: CopyStats) -> int:
    try:
        src = os.open(name, _FILE, dir_fd=src_dir)
    except PermissionError:  # mode 000 and not root: read it as its owner
        mode = stat.S_IMODE(os.stat(name, dir_fd=src_dir, follow_symlinks=False).st_mode)
        os.chmod(name, mode | 0o400, dir_fd=src_dir, follow_symlinks=False)
        try:
            src = os.open(name, _FILE, dir_fd=src_dir)
        finally:
            os.chmod(name, mode, dir_fd=src_dir, follow_symlinks=False)
    try:
        now = os.fstat(src)
        if not stat.S_ISREG(now.st_mode):  # swapped for a fifo since the listing: skip it
            return 0
        dst = os.open(name, _NEW, 0o600, dir_fd=dst_dir)
        try:
            if _clone(src, dst, stats):
                copied = now.st_size
            elif now.st_blocks * 512 >= now.st_size:  # no room for holes: one run of data
                copied = _copy_data(src, dst, 0, now.st_size, stats)
                stats.copied += 1
            else:
                copied = _copy_sparse(src, dst, now.st_size, stats)
                stats.copied += 1
            _finish(dst, now, stats)
        finally:
            os.close(dst)
    finally:
        os.close(src)
    return copied


def _clone(src: int, dst: int, stats: CopyStats) -> bool:
    """Clone ``src`` into the empty ``dst`` (``FICLONE``); ``False`` when this filesystem
    pair cannot, so the caller copies. Tried for every file: a tree may span mounts."""
    if stats.clone_error and stats.cloned == 0:
        return False  # the first failed and none worked: the same pair throughout, most often
    try:
        fcntl.ioctl(dst, FICLONE, src)
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EOPNOTSUPP, errno.ENOTTY, errno.EINVAL,
                             errno.ENOSYS, errno.EPERM):
            raise
        if not stats.clone_error:
            stats.clone_error = ("EOPNOTSUPP" if exc.errno == errno.EOPNOTSUPP  # not ENOTSUP
                                 else errno.errorcode.get(exc.errno or 0, str(exc.errno)))
        return False
    stats.cloned += 1
    return True


def _copy_sparse(src: int, dst: int, size: int, stats: CopyStats) -> int:
    """Copy the data runs of the first ``size`` bytes of ``src`` (``SEEK_DATA``/``SEEK_HOLE``)
    into ``dst`` at the same offsets, then give ``dst`` that size: holes stay holes."""
    copied = 0
    pos = 0
    while pos < size:
        try:
            start = os.lseek(src, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: nothing but holes from here on
                raise
            break
        if start >= size:
            break
        end = min(os.lseek(src, start, os.SEEK_HOLE), size)
        os.lseek(dst, start, os.SEEK_SET)
        done = _copy_data(src, dst, start, end - start, stats)
        copied += done
        if done < end - start:  # it shrank meanwhile
            break
        pos = end
    os.ftruncate(dst, size)
    return copied


def _copy_data(src: int, dst: int, offset: int, length: int, stats: CopyStats) -> int:
    """Copy ``length`` bytes of ``src`` from ``offset`` to ``dst``'s position, in the kernel
    (fewer if ``src`` shrank meanwhile: a background process may be writing it; it is not
    waited for)."""
    global _range_ok
    if stats.limit is not None and stats.written + length > stats.limit:
        raise TreeTooBig(f"the copy would write over {stats.limit} bytes")
    copied = 0
    while copied < length:
        want = length - copied
        if _range_ok:
            try:
                n = os.copy_file_range(src, dst, want, offset + copied)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                    raise
                _range_ok = False
                continue
        else:
            n = os.sendfile(dst, src, offset + copied, want)
        if n == 0:
            break
        copied += n
    stats.written += copied
    return copied


def _finish(fd: int, st: os.stat_result, stats: CopyStats) -> None:
    """Give a copied file or folder the source's owner (unless it is the copy's already: the
    new file has it), mode and times."""
    if (st.st_uid, st.st_gid) != stats.owner:
        with contextlib.suppress(OSError):
            os.fchown(fd, st.st_uid, st.st_gid)
    os.fchmod(fd, stat.S_IMODE(st.st_mode))
    os.utime(fd, ns=(st.st_atime_ns, st.st_mtime_ns))
