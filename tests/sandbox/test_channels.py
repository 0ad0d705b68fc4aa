"""The host's channels to a session: descriptor limits, output caps, bad strings, forged status.

Tests taking ``backend`` run on every backend (local and docker).
"""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Callable, Iterator

import pytest

from taskgym.errors import SandboxError, SandboxTextError
from taskgym.sandbox import Backend, SandboxSpec
from taskgym.sandbox.local import LocalBackend


@contextlib.contextmanager
def _descriptors_held(count: int) -> Iterator[list[int]]:
    """Hold ``count`` more open descriptors (raising the soft RLIMIT_NOFILE as needed)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = count + 256
    if hard != resource.RLIM_INFINITY and hard < wanted:
        pytest.skip(f"the hard RLIMIT_NOFILE ({hard}) is below {wanted}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, wanted), hard))
    held: list[int] = []
    try:
        held += [os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC) for _ in range(count)]
        yield held
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


@pytest.mark.sandbox
def test_sessions_start_with_descriptors_past_1024(local_backend: LocalBackend) -> None:
    """select() fails on descriptors past 1023; every descriptor a session opens is past it."""
    with _descriptors_held(1100) as held:
        assert max(held) > 1024
        with local_backend.start(SandboxSpec()) as session:
            result = session.exec("echo past 1024")
            assert result.stdout == "past 1024\n", result
        result, _ = local_backend.run(SandboxSpec(), ["/bin/echo", "one-shot"], timeout=30)
        assert result.stdout == "one-shot\n", result


@pytest.mark.sandbox
def test_running_out_of_descriptors_is_a_clear_sandbox_error(local_backend: LocalBackend) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    in_use = len(os.listdir("/proc/self/fd"))
    for spare in (0, 2, 5, 9):  # out of descriptors at different points of the start
        resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + spare, hard))
        try:
            with pytest.raises(SandboxError, match="RLIMIT_NOFILE|file descriptor"):
                local_backend.start(SandboxSpec()).close()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert len(os.listdir("/proc/self/fd")) == in_use, "a failed start left descriptors open"
    with local_backend.start(SandboxSpec()) as session:
        assert session.exec("echo fine").stdout == "fine\n"


def test_runaway_output_says_the_cap_was_hit(backend: Backend) -> None:
    with backend.start(SandboxSpec(stream_limit_bytes=1 << 20)) as session:
        for command in ("yes", "cat /dev/zero >&2", "python3 -c 'import sys\nwhile 1: "
                        "sys.stdout.write(\"x\" * 65536)'"):
            result = session.exec(command, timeout=60)
            assert result.truncated and not result.timed_out, (command, result)
            text = result.stdout + result.stderr
            assert "output cap" in text and "1 MiB" in text, (command, text[-500:])
        small = session.exec("head -c 300000 /dev/zero | tr '\\0' x")
        assert small.truncated and "output cap" not in small.stdout + small.stderr


@pytest.mark.parametrize("bad", ["\ud800", "a\udfffb", "\udbff\udbff", "x\ud83d"])
def test_lone_surrogates_raise_a_sandbox_error(backend: Backend, bad: str) -> None:
    with backend.start(SandboxSpec()) as session:
        calls: list[Callable[[], object]] = [
            lambda: session.exec(f"echo {bad}"),
            lambda: session.exec(f"echo {bad} # " + "long " * 30),
            lambda: session.exec(f"echo '{bad}'\necho two"),
            lambda: session.read_file(f"file{bad}.txt"),
            lambda: session.write_file(f"file{bad}.txt", b"x"),
            lambda: session.write_file(f"dir{bad}/file.txt", b"x"),
        ]
        for call in calls:
            with pytest.raises(SandboxTextError, match="lone surrogate"):
                call()
        assert session.exec("echo fine").stdout == "fine\n"
    with pytest.raises(SandboxTextError):
        backend.start(SandboxSpec(env={"VAR": bad})).close()
    with pytest.raises(SandboxTextError):
        backend.run(SandboxSpec(), ["/bin/echo", bad], timeout=30)


def test_escaped_bytes_are_the_bytes_they_stand_for(backend: Backend) -> None:
    """``\\udc80``-``\\udcff`` are how ``os.fsdecode`` gives undecodable bytes: they pass as those bytes."""
    name = os.fsdecode(b"raw-\x80\xff.txt")
    with backend.start(SandboxSpec()) as session:
        session.write_file(name, b"content")
        assert session.read_file(name) == b"content"
        result = session.exec(f"cat {name}; printf '%s' {name} | od -An -tx1")
        assert result.stdout.startswith("content") and "80 ff" in result.stdout, result
