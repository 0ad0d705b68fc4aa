"""The GIL-holding system calls behave as the ``os`` functions they stand in for, in every
implementation that loads here (the compiled helper, ctypes, and ``os`` itself)."""

from __future__ import annotations

import array
import os
import socket
import tempfile
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from taskgym.sandbox.host import gil_held


@pytest.fixture()
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


IMPLEMENTATIONS = gil_held.implementations()


@pytest.fixture(params=sorted(IMPLEMENTATIONS))
def calls(request: pytest.FixtureRequest) -> SimpleNamespace:
    write, pread, recv_pid = IMPLEMENTATIONS[request.param]
    return SimpleNamespace(write=write, pread=pread, recv_pid=recv_pid)


def test_the_compiled_helper_is_in_use() -> None:
    # install.sh installs gcc before taskgym, so the build compiled the helper
    assert gil_held.IMPLEMENTATION == "c", "reinstall taskgym with a C compiler present"
    assert set(IMPLEMENTATIONS) == {"c", "ctypes", "os"}


def test_write_through_a_pipe(calls: SimpleNamespace, pipe: tuple[int, int]) -> None:
    r, w = pipe
    assert calls.write(w, b"status\n") == 7
    assert os.read(r, 4096) == b"status\n"


def test_pread_reads_from_an_offset_and_past_one_buffer(calls: SimpleNamespace) -> None:
    data = bytes(range(256)) * 1000  # 256,000 bytes: several 64 KiB chunks
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.flush()
        fd = fh.fileno()
        assert calls.pread(fd, 10, 5) == data[5:15]
        assert calls.pread(fd, len(data) + 1, 0) == data
        assert calls.pread(fd, 70_000, 200_000) == data[200_000:]
        assert calls.pread(fd, 100, len(data)) == b""


def test_errors_are_the_os_errors(calls: SimpleNamespace, pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.set_blocking(w, False)
    with pytest.raises(BlockingIOError):
        while True:
            calls.write(w, b"x" * 65536)
    os.close(r)
    with pytest.raises(BrokenPipeError):
        calls.write(w, b"x")
    os.set_blocking(w, True)
    closed = os.dup(w)
    os.close(closed)
    for call in (lambda: calls.recv_pid(closed, 10), lambda: calls.pread(closed, 10, 0)):
        with pytest.raises(OSError) as info:
            call()
        assert info.value.errno == 9  # EBADF


def test_a_recv_returns_at_most_one_chunk(calls: SimpleNamespace) -> None:
    host, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with host, peer:
        peer.setblocking(False)
        sent = 0
        try:
            while sent < 100_000:
                sent += calls.write(peer.fileno(), b"y" * 100_000)
        except BlockingIOError:
            pass
        got, _pid = calls.recv_pid(host.fileno(), 1_000_000)
        assert 0 < len(got) <= 65536 and set(got) == {ord("y")}


def test_recv_pid_names_each_writer_and_drops_passed_descriptors(calls: SimpleNamespace) -> None:
    host, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with host, peer:
        host.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        host.setblocking(False)
        with pytest.raises(BlockingIOError):
            calls.recv_pid(host.fileno(), 4096)
        child = os.fork()
        if child == 0:  # another writer: its bytes come in a read of their own
            os.write(peer.fileno(), b"from the child")
            os._exit(0)
        assert os.waitpid(child, 0)[1] == 0
        peer.send(b"from the parent")
        assert calls.recv_pid(host.fileno(), 4096) == (b"from the child", child)
        assert calls.recv_pid(host.fileno(), 4096) == (b"from the parent", os.getpid())
        held = len(os.listdir("/proc/self/fd"))
        peer.sendmsg([b"fds"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                 array.array("i", [0, 1, 2]).tobytes())])
        assert calls.recv_pid(host.fileno(), 4096) == (b"fds", os.getpid())
        assert len(os.listdir("/proc/self/fd")) == held, "passed descriptors were installed"
        peer.shutdown(socket.SHUT_WR)
        assert calls.recv_pid(host.fileno(), 4096) == (b"", 0)
    plain, other = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with plain, other:  # without SO_PASSCRED the kernel names no writer
        other.send(b"x")
        assert calls.recv_pid(plain.fileno(), 4096) == (b"x", 0)
