"""Small system calls made while holding the GIL, for the step loop of a sandbox session.

``os.write``, ``os.pread`` and ``socket.recvmsg`` release the GIL around the call. For a call
that cannot block (a few bytes into a pipe with room, a read of what ``poll`` said is there,
a read of a tmpfs file) the release buys nothing, and with many threads stepping sandboxes
each release is a hand-over: the thread must then queue to take the GIL back. A step makes
four such calls and one real wait; made without releasing the GIL, only the wait hands
it over.

Three implementations, the first that loads is used (:data:`IMPLEMENTATION` names it):
``c``, the compiled helper ``_syscalls`` (built at install where a C compiler is there;
about 1 µs a call); ``ctypes``, libc through ``ctypes.PyDLL``, which keeps the GIL too but
costs about 4 µs a call more; ``os``, the plain functions, with the same results.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import struct
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["IMPLEMENTATION", "implementations", "pread", "recv_pid", "write"]

_CHUNK = 65536
_Calls = tuple[Callable[[int, bytes], int], Callable[[int, int, int], bytes],
               Callable[[int, int], tuple[bytes, int]]]
_UCRED = struct.Struct("=iII")  # struct ucred: pid, uid, gid
_CMSG_HEADER = struct.Struct("@Nii")  # struct cmsghdr: length, level, type
_CONTROL = socket.CMSG_SPACE(_UCRED.size)


def _errno_error() -> OSError:
    code = ctypes.get_errno()
    return OSError(code, os.strerror(code))


def _past_one_chunk(pread_chunk: Callable[[int, int, int], bytes]
                    ) -> Callable[[int, int, int], bytes]:
    """A ``pread`` from one that reads at most one chunk keeping the GIL: past that chunk the
    rest is big, and is read by ``os.pread``, which lets the GIL go."""

    def pread(fd: int, size: int, offset: int) -> bytes:
        data = pread_chunk(fd, size, offset)
        if len(data) == _CHUNK < size:
            data += os.pread(fd, size - _CHUNK, offset + _CHUNK)
        return data

    return pread


def _bind() -> _Calls | None:
    try:
        libc: Any = ctypes.PyDLL(None, use_errno=True)
        c_write, c_pread = libc.write, libc.pread
    except (OSError, AttributeError):
        return None
    c_write.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    c_write.restype = ctypes.c_ssize_t
    c_pread.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int64]
    c_pread.restype = ctypes.c_ssize_t

    def write_held(fd: int, data: bytes) -> int:
        while True:
            done = c_write(fd, data, len(data))
            if done >= 0:
                return int(done)
            if ctypes.get_errno() != errno.EINTR:
                raise _errno_error()

    local = threading.local()

    def buffer() -> Any:
        buf = getattr(local, "buf", None)
        if buf is None:
            buf = local.buf = ctypes.create_string_buffer(_CHUNK)
        return buf

    def pread_held(fd: int, size: int, offset: int) -> bytes:
        buf = buffer()
        while True:
            got = c_pread(fd, buf, min(size, _CHUNK), offset)
            if got >= 0:
                return ctypes.string_at(buf, got)
            if ctypes.get_errno() != errno.EINTR:
                raise _errno_error()

    class Iovec(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]

    class Msghdr(ctypes.Structure):
        _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint32),
                    ("iov", ctypes.POINTER(Iovec)), ("iovlen", ctypes.c_size_t),
                    ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                    ("flags", ctypes.c_int)]

    c_recvmsg = libc.recvmsg
    c_recvmsg.argtypes = [ctypes.c_int, ctypes.POINTER(Msghdr), ctypes.c_int]
    c_recvmsg.restype = ctypes.c_ssize_t

    def recv_pid_held(fd: int, size: int) -> tuple[bytes, int]:
        buf = buffer()
        control = ctypes.create_string_buffer(_CONTROL)
        iov = Iovec(ctypes.cast(buf, ctypes.c_void_p), min(size, _CHUNK))
        while True:
            msg = Msghdr(None, 0, ctypes.pointer(iov), 1,
                         ctypes.cast(control, ctypes.c_void_p), _CONTROL, 0)
            got = c_recvmsg(fd, ctypes.byref(msg), socket.MSG_CMSG_CLOEXEC)
            if got >= 0:
                return ctypes.string_at(buf, got), _pid_in(control.raw[: msg.controllen])
            if ctypes.get_errno() != errno.EINTR:
                raise _errno_error()

    return write_held, _past_one_chunk(pread_held), recv_pid_held


def _pid_in(control: bytes) -> int:
    """The writer's pid in ``control``, the ancillary data of one ``recvmsg`` (0 if none)."""
    at = 0
    while at + _CMSG_HEADER.size <= len(control):
        length, level, kind = _CMSG_HEADER.unpack_from(control, at)
        if length < _CMSG_HEADER.size:
            break
        if (level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS
                and length >= _CMSG_HEADER.size + _UCRED.size):
            return int(_UCRED.unpack_from(control, at + _CMSG_HEADER.size)[0])
        at += socket.CMSG_SPACE(length - _CMSG_HEADER.size)
    return 0


def _recv_pid_os(fd: int, size: int) -> tuple[bytes, int]:
    """``recv_pid`` with ``socket.recvmsg`` (which lets the GIL go)."""
    sock = socket.socket(fileno=fd)
    try:
        data, ancillary, _flags, _address = sock.recvmsg(min(size, _CHUNK), _CONTROL,
                                                          socket.MSG_CMSG_CLOEXEC)
    finally:
        sock.detach()
    for level, kind, cred in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(cred) >= 12:
            return data, int(_UCRED.unpack_from(cred)[0])
    return data, 0


def _compiled() -> _Calls | None:
    try:
        from taskgym.sandbox.host import _syscalls  # type: ignore[attr-defined]
    except ImportError:
        return None
    if not hasattr(_syscalls, "recv_pid"):  # built from an older source: rebuild it
        return None
    return _syscalls.write, _past_one_chunk(_syscalls.pread), _syscalls.recv_pid


def implementations() -> dict[str, _Calls]:
    """Every implementation that loads here, best first: ``c``, ``ctypes``, ``os``."""
    found: dict[str, _Calls | None] = {"c": _compiled(), "ctypes": _bind(),
                                       "os": (os.write, os.pread, _recv_pid_os)}
    return {name: calls for name, calls in found.items() if calls is not None}


IMPLEMENTATION, (write, pread, recv_pid) = next(iter(implementations().items()))
"""Which implementation is in use (``c``, ``ctypes`` or ``os``); then the three calls:

``write`` is ``os.write`` for a write that cannot block (a short write into a pipe with
room); ``pread`` is ``os.pread`` of a regular file, where past 64 KiB the rest is read
releasing the GIL; ``recv_pid`` is a ``recvmsg`` (of at most 64 KiB) on a Unix socket with
``SO_PASSCRED``, for a read that cannot block (after ``poll`` said the data is there),
returning the data and the pid of the process that wrote it (0 when the kernel gave none)."""
