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


_TAG = "t=$(declare -f __ts __tgm 2>/dev/null | grep -o '__TG_[0-9a-f]*' | head -1); "
_EVERY_FD = "for fd in $(ls /proc/$$/fd); do [ $fd -gt 2 ] && [ $fd != 255 ] && "
# each runs as a command in the persistent shell; {} is what is written on every descriptor
# the shell holds (its status channel among them, on both backends), or on its stdout/stderr
_FORGERIES = {
    "forged status lines": _TAG + _EVERY_FD + "printf \"${t}0 1\\n\\n${t}0 1\\n${t}0\\n\" >&$fd; "
                           "done 2>/dev/null; printf \"\\n${t}0 1\\n\"; printf \"\\n${t}1\\n\" >&2",
    "status with the next numbers": _TAG + "n=${__tgn:-0}; " + _EVERY_FD +
        "printf \"${t}0 $((n+1))\\n\" >&$fd; done 2>/dev/null; "
        "printf \"\\n${t}0 $((n+1))\\n\"; printf \"\\n${t}$((n+1))\\n\" >&2",
    "garbage after the tag": _TAG + _EVERY_FD + "printf \"${t}abc\\n\" >&$fd; done 2>/dev/null; "
                             "printf \"\\n${t}x y\\n\"; printf \"\\n${t}zz\\n\" >&2",
    "plain garbage": _EVERY_FD + "printf 'garbage\\n\\0\\377' >&$fd; done 2>/dev/null; echo",
    "a huge line": _TAG + _EVERY_FD + "head -c 200000 /dev/zero | tr '\\0' 7 >&$fd; done "
                   "2>/dev/null; printf \"\\n${t}\"; head -c 100000 /dev/zero | tr '\\0' 7",
    "a partial line": _TAG + _EVERY_FD + "printf \"${t}\" >&$fd; done 2>/dev/null; "
                      "printf \"\\n${t}\"; printf \"\\n${t}\" >&2",
    "the descriptor closed": _EVERY_FD + "eval \"exec $fd>&-\"; done 2>/dev/null; exec 251>&-",
    "dup from /proc/self/fd": _TAG + _EVERY_FD + "{ exec 9>/proc/self/fd/$fd; printf \"${t}0 1\\n\""
                              " >&9; exec 9>&-; }; done 2>/dev/null; echo",
    "a child opens the shell's descriptors": _TAG + "python3 child.py \"$t\"",
    "the status function replaced": "__ts() { echo no; }; __tgm() { echo no; }; true",
    "the status function called": "echo a; __ts; echo b; __ts 1; __ts 2; __ts 3; __ts 4; true",
    # this is the session's first command, number 2 (the ready line was 1): an exact forgery,
    # taken for this command's line; the real one must then not pass for the next command's
    "the status function called on the saved descriptor, then a pause": _EVERY_FD +
        "[ $fd -gt 9 ] && { __ts 2 251>&$fd; __ts 3 251>&$fd; }; done 2>/dev/null; sleep 0.5",
    "one exact forgery on the saved descriptor, then a pause": _EVERY_FD +
        "[ $fd -gt 9 ] && { __ts 2 251>&$fd; break; }; done 2>/dev/null; sleep 0.5",
}


_CHILD = b"""
import os, sys
ppid, opened = os.getppid(), []
for name in os.listdir(f"/proc/{ppid}/fd"):
    try:
        fd = os.open(f"/proc/{ppid}/fd/{name}", os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        continue
    opened.append(os.readlink(f"/proc/{ppid}/fd/{name}").split(":")[0])
    if name != "255":  # the shell's input: what it would run
        for line in (b"0 1", b"0 2", b"x"):
            os.write(fd, sys.argv[1].encode() + line + b"\\n")
print("held", sorted(os.readlink(f"/proc/{ppid}/fd/{name}").split(":")[0]
                     for name in os.listdir(f"/proc/{ppid}/fd")))
print("opened", sorted(opened))
"""


@pytest.mark.parametrize("attack", sorted(_FORGERIES))
def test_a_forged_status_never_breaks_the_session(backend: Backend, attack: str) -> None:
    """Whatever a command writes where the status line travels, exec returns (its status, or
    a fresh shell with a note), nothing raises, and the session goes on working."""
    with backend.start(SandboxSpec(stream_limit_bytes=1 << 20)) as session:
        session.write_file("kept.txt", b"kept")
        session.write_file("child.py", _CHILD)
        result = session.exec(_FORGERIES[attack], timeout=10)
        assert isinstance(result.exit_code, int), result
        if result.restarted and not result.timed_out and "status channel" not in result.stderr:
            assert result.exit_code != 0, result  # the shell died (a closed descriptor...)
        # a forged line the host took for this command's leaves the real one for the next
        # command, which then sees a stale line and restarts: it must be the last surprise
        results = [session.exec(f"echo next-{i}", timeout=10) for i in range(3)]
        assert results[-1].stdout == "next-2\n" and not results[-1].restarted, (result, results)
        assert all(not r.restarted or "status channel" in r.stderr for r in results), results
        assert session.exec("cat kept.txt").stdout == "kept"


def test_what_a_command_starts_cannot_reach_the_status_channel(backend: Backend) -> None:
    """The shell's descriptors other than stdin/stdout/stderr are not inherited, and none
    can be reopened through /proc by a child (a socket cannot; docker: see the docs)."""
    with backend.start(SandboxSpec()) as session:
        result = session.exec("ls /proc/self/fd; sleep 5 & sleep 0.1; ls /proc/$!/fd; kill $!; wait")
        assert sorted(set(result.stdout.split())) == ["0", "1", "2", "3"], result  # 3: ls's dir
        if backend.name == "local":
            session.write_file("child.py", _CHILD)
            result = session.exec(_FORGERIES["a child opens the shell's descriptors"])
            # the shell holds its status socket (bash's saved copy of 251) while the command
            # runs, and a socket cannot be opened through /proc; what opens is /dev/null, the
            # output files and the shell's input pipe (writing there is typing a command)
            assert "'socket'" in result.stdout.split("held")[1].split("\n")[0], result
            assert "opened ['/.taskgym/e/err', '/.taskgym/o/out', '/dev/null', 'pipe']" in (
                result.stdout), result
            assert not result.restarted and result.exit_code == 0, result
