"""The pieces of the shell sessions' command protocol that need no session: the status
socket and its read with the writer's pid, the status line's parser, the output files and
the runaway-output check (:class:`~taskgym.sandbox.shell.session.ShellSession` uses them)."""

from __future__ import annotations

import os
import socket

from taskgym.sandbox.base import SandboxSpec
from taskgym.sandbox.host import gil_held
from taskgym.sandbox.shell.commands import STATUS_MAX, BadStatus
from taskgym.sandbox.shell.output import join_cut

__all__ = ["REWIND_AT", "RUNAWAY_CHECK_SEC", "open_output", "output_full", "parse_status",
           "read_capped", "read_status", "status_socket"]

RUNAWAY_CHECK_SEC = 0.25
"""How often a running command's output files are checked against the stream limit."""

REWIND_AT = 1 << 16
"""Output files are emptied before a command once this much has been read from them."""


def status_socket() -> tuple[socket.socket, socket.socket]:
    """The host's end and the shell's end of a new status channel. The host's end asks for the
    writer's credentials (``SO_PASSCRED``): the kernel then stamps every write with the pid of
    the process that made it, and never joins writes of two processes in one read."""
    host, shell = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        host.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
    except BaseException:
        host.close()
        shell.close()
        raise
    return host, shell


def read_status(fd: int) -> tuple[bytes, int]:
    """What is waiting on ``fd``, the host's end of a status channel (:func:`status_socket`; up
    to 4 kB, empty once every writer is gone), and the pid, in the host's pid namespace, of
    the process that wrote it (0 when the kernel gave none)."""
    return gil_held.recv_pid(fd, 4096)


def parse_status(buf: bytes, tag: bytes, seq: int) -> int | None:
    """The exit status in ``buf`` once it holds the whole status line of the command numbered
    ``seq`` (``<tag><status> <sequence number>``); ``None`` while it is a beginning of one.

    Raises :class:`BadStatus` for anything else: bytes a command wrote on the channel
    (through bash's saved copy, which its builtins can reach), an earlier command's
    line, or more than one line.
    """
    end = buf.find(b"\n")
    if end < 0:
        if len(buf) > STATUS_MAX or not tag.startswith(buf[: len(tag)]):
            raise BadStatus(buf)
        return None
    line = buf[:end]
    suffix = b" %d" % seq
    code = line[len(tag) : len(line) - len(suffix)]
    if (end + 1 != len(buf) or not line.startswith(tag) or not line.endswith(suffix)
            or not code.isdigit() or len(code) > 3):
        raise BadStatus(buf)
    return int(code)

def output_full(spec: SandboxSpec, out_fd: int, err_fd: int) -> bool:
    """Whether the command filled its stdout or stderr file (runaway output)."""
    full = spec.stream_limit_bytes - 4096  # a tmpfs is full to the page
    return any(os.fstat(fd).st_size >= full for fd in (out_fd, err_fd))

def open_output(name: str, control: int) -> int:
    """The host's descriptor of an output file; without access-time updates where allowed
    (each step reads a file the shell has just written, which would dirty its inode)."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(name, flags | os.O_NOATIME, dir_fd=control)
    except PermissionError:  # O_NOATIME needs the file's owner (or CAP_FOWNER)
        return os.open(name, flags, dir_fd=control)

def read_capped(fd: int, offset: int, cap: int) -> tuple[str, int, bool]:
    """An output file from ``offset`` on, as text (head and tail past ``cap``); the offset
    read up to; whether the text was cut."""
    if fd < 0:
        return "", offset, False
    data = gil_held.pread(fd, cap + 1, offset)
    if len(data) <= cap:
        return data.decode("utf-8", errors="replace"), offset + len(data), False
    size = os.fstat(fd).st_size
    half = cap // 2
    tail = os.pread(fd, half, size - half)
    return join_cut(data[:half], size - offset - 2 * half, tail), size, True
