"""File operations confined to one directory, by file descriptor.

Every path is walked one component at a time with ``O_NOFOLLOW``, so neither a
symbolic link nor ``..`` can lead outside the root, whatever the sandboxed agent
has planted in its workspace.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from taskgym.errors import SandboxError, SandboxPathError
from taskgym.sandbox.shell.commands import encode_text

if TYPE_CHECKING:
    from taskgym.sandbox.base import SandboxSpec

__all__ = ["WorkspaceFiles", "copy_in", "copy_out", "open_fifo", "read_file", "relative_parts",
           "write_file"]

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def relative_parts(path: str, workdir: str) -> list[str]:
    """Split ``path`` (absolute under ``workdir``, or relative to it) into safe components."""
    encode_text(path, f"the path {path!r}")  # a NUL or a lone surrogate: SandboxTextError
    pure = PurePosixPath(path)
    if pure.is_absolute():
        try:
            pure = pure.relative_to(workdir)
        except ValueError:
            raise SandboxPathError(
                f"{path!r} is outside the workspace {workdir}; "
                "file tools work inside it (use bash for other paths)"
            ) from None
    parts = [p for p in pure.parts if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise SandboxPathError(f"{path!r} contains '..'; give a path inside the workspace")
    if not parts:
        raise SandboxPathError(f"{path!r} names the workspace itself, not a file")
    return parts


def _open_dir(root_fd: int, parts: list[str], create: bool) -> int:
    fd = os.dup(root_fd)
    try:
        for part in parts:
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise SandboxPathError(f"{part!r} is a link or not a folder; refusing") from None
                raise
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def _open_file(root_fd: int, parts: list[str], flags: int, mode: int, verb: str
               ) -> tuple[int, os.stat_result]:
    """Open the regular file ``parts`` below ``root_fd`` with ``flags`` (never through a link;
    a folder is made along the way when ``O_CREAT`` is in ``flags``): its fd and its stat."""
    dfd = _open_dir(root_fd, parts[:-1], create=bool(flags & os.O_CREAT))
    try:
        try:
            fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode,
                         dir_fd=dfd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise SandboxPathError(f"{parts[-1]!r} is a symbolic link; refusing to {verb}"
                                       ) from None
            raise
    finally:
        os.close(dfd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SandboxPathError(f"{'/'.join(parts)!r} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def read_file(root_fd: int, parts: list[str], limit: int) -> tuple[bytes, int]:
    """Return up to ``limit`` bytes of a regular file and its full size."""
    fd, st = _open_file(root_fd, parts, os.O_RDONLY, 0, "follow")
    try:
        chunks: list[bytes] = []
        remaining = limit
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        return b"".join(chunks), st.st_size
    finally:
        os.close(fd)


def write_file(root_fd: int, parts: list[str], data: bytes, mode: int) -> None:
    """Create or truncate a regular file (never through a link) and write ``data``."""
    fd, _st = _open_file(root_fd, parts, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode, "write")
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def open_fifo(root_fd: int, parts: list[str], write: bool) -> int:
    """Open the FIFO ``parts`` below ``root_fd`` non-blocking, for writing or reading: looked
    at through an ``O_PATH`` descriptor first (which opens nothing), so that no link is
    followed and nothing but a FIFO is ever opened."""
    dfd = _open_dir(root_fd, parts[:-1], create=False)
    try:
        found = os.open(parts[-1], os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
    finally:
        os.close(dfd)
    try:
        if not stat.S_ISFIFO(os.fstat(found).st_mode):
            raise SandboxPathError(f"{'/'.join(parts)!r} is not a FIFO; refusing to open it")
        flags = (os.O_WRONLY if write else os.O_RDONLY) | os.O_NONBLOCK | os.O_CLOEXEC
        return os.open(f"/proc/self/fd/{found}", flags)  # the very FIFO looked at
    finally:
        os.close(found)


def copy_in(src: Path, root_fd: int) -> None:
    """Copy the host folder ``src`` into the directory open as ``root_fd``."""
    src = Path(src)
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        parts = [p for p in rel.parts if p != "."]
        dfd = _open_dir(root_fd, parts, create=True)
        try:
            for name in sorted(dirnames):
                full = os.path.join(dirpath, name)
                if os.path.islink(full):
                    os.symlink(os.readlink(full), name, dir_fd=dfd)
                    dirnames.remove(name)
                else:
                    try:
                        os.mkdir(name, stat.S_IMODE(os.lstat(full).st_mode) | 0o700, dir_fd=dfd)
                    except FileExistsError:
                        pass
            for name in filenames:
                full = os.path.join(dirpath, name)
                st = os.lstat(full)
                if stat.S_ISLNK(st.st_mode):
                    os.symlink(os.readlink(full), name, dir_fd=dfd)
                elif stat.S_ISREG(st.st_mode):
                    with open(full, "rb") as fh:
                        write_file(dfd, [name], fh.read(), stat.S_IMODE(st.st_mode))
        finally:
            os.close(dfd)


COPY_DEPTH = 256
"""Folders nested deeper than this are not copied out: the walk (and the host's removal of the
copy) recurses once per level, and a workspace's folders nested thousands deep would make it
fail in a way the sandboxed code chose."""


def copy_out(root_fd: int, dest: Path) -> None:
    """Copy the tree under ``root_fd`` into host folder ``dest``; links stay links.

    Only regular files, folders and symbolic links are copied; devices, fifos and
    sockets are skipped, and so is what lies deeper than :data:`COPY_DEPTH` folders.
    """
    dest.mkdir(parents=True, exist_ok=True)
    for dirpath, dirnames, filenames, dfd in os.fwalk(".", dir_fd=root_fd, follow_symlinks=False):
        if dirpath.count("/") >= COPY_DEPTH:
            dirnames.clear()  # top-down: fwalk does not enter them
        out_dir = dest / dirpath
        for name in dirnames:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            target = out_dir / name
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(name, dir_fd=dfd), target)
            else:
                target.mkdir(mode=stat.S_IMODE(st.st_mode) | 0o700, exist_ok=True)
        for name in filenames:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            target = out_dir / name
            if stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(name, dir_fd=dfd), target)
            elif stat.S_ISREG(st.st_mode):
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                             dir_fd=dfd)
                try:
                    with open(target, "wb") as out:
                        while chunk := os.read(fd, 1 << 20):
                            out.write(chunk)
                finally:
                    os.close(fd)
                os.chmod(target, stat.S_IMODE(st.st_mode))


class WorkspaceFiles:
    """A session's file tools, through the descriptor of its workspace it holds in ``_root_fd``
    (``-1`` once closed): the local and the docker sessions both reach their workspace so."""

    spec: SandboxSpec
    _root_fd: int

    def _root(self) -> int:
        if self._root_fd < 0:
            raise SandboxError("the session is closed")
        return self._root_fd

    def read_file(self, path: str, limit: int | None = None) -> bytes:
        parts = relative_parts(path, self.spec.workdir)
        data, _size = read_file(self._root(), parts, limit if limit is not None else 1 << 30)
        return data

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        write_file(self._root(), relative_parts(path, self.spec.workdir), data, mode & 0o777)

    def open_fifo(self, path: str, write: bool) -> int:
        return open_fifo(self._root(), relative_parts(path, self.spec.workdir), write)

    def export_workspace(self, dest: Path) -> None:
        copy_out(self._root(), dest)
