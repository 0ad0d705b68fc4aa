"""The GIL-holding system calls behave as the ``os`` functions they stand in for."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator

import pytest

from taskgym.sandbox import _gil_held


@pytest.fixture()
def pipe() -> Iterator[tuple[int, int]]:
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


def test_libc_is_bound_here() -> None:
    assert _gil_held.write is not os.write and _gil_held.pread is not os.pread


def test_write_then_read_through_a_pipe(pipe: tuple[int, int]) -> None:
    r, w = pipe
    assert _gil_held.write(w, b"status\n") == 7
    assert _gil_held.read(r, 4096) == b"status\n"
    os.close(w)
    assert _gil_held.read(r, 4096) == b""  # end of file


def test_pread_reads_from_an_offset_and_past_one_buffer() -> None:
    data = bytes(range(256)) * 1000  # 256,000 bytes: several 64 KiB chunks
    with tempfile.TemporaryFile() as fh:
        fh.write(data)
        fh.flush()
        fd = fh.fileno()
        assert _gil_held.pread(fd, 10, 5) == data[5:15]
        assert _gil_held.pread(fd, len(data) + 1, 0) == data
        assert _gil_held.pread(fd, 70_000, 200_000) == data[200_000:]
        assert _gil_held.pread(fd, 100, len(data)) == b""


def test_errors_are_the_os_errors(pipe: tuple[int, int]) -> None:
    r, w = pipe
    os.set_blocking(w, False)
    with pytest.raises(BlockingIOError):
        while True:
            _gil_held.write(w, b"x" * 65536)
    os.close(r)
    with pytest.raises(BrokenPipeError):
        _gil_held.write(w, b"x")
    os.set_blocking(w, True)
    closed = os.dup(w)
    os.close(closed)
    with pytest.raises(OSError) as info:
        _gil_held.read(closed, 10)
    assert info.value.errno == 9  # EBADF
