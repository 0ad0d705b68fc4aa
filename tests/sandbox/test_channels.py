"""The host's channels to a session: descriptor limits, output caps, bad strings, forged status.

Tests taking ``backend`` run on every backend (local and docker).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import taskgym
from taskgym.errors import SandboxTextError
from taskgym.sandbox import Backend, ExecResult, SandboxSpec, Session
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


_OUT_OF_DESCRIPTORS = """
import os, re, resource
from taskgym.errors import SandboxError
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.local import LocalBackend

backend = LocalBackend()
backend.start(SandboxSpec()).close()  # what a first start opens for good is not a leak
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
in_use = len(os.listdir("/proc/self/fd"))
for spare in range(64):
    resource.setrlimit(resource.RLIMIT_NOFILE, (in_use + spare, hard))
    try:
        backend.start(SandboxSpec()).close()
    except SandboxError as exc:
        if not re.search("RLIMIT_NOFILE|file descriptor", str(exc)):
            print("unclear", spare, exc)
            break
    else:
        print("started", spare)
        break
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    left_open = len(os.listdir("/proc/self/fd")) - in_use
    if left_open:
        print("left open", spare, left_open)
        break
else:
    print("none started")
for lowered in (100, 251, 252, 255):  # below the 256 the shell needs: the sandbox gets 1,024
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowered, hard))
    try:
        with backend.start(SandboxSpec()) as session:
            print(lowered, session.exec("ulimit -n").stdout.strip())
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
"""


@pytest.mark.sandbox
def test_running_out_of_descriptors_is_a_clear_sandbox_error(local_backend: LocalBackend) -> None:
    """Out of descriptors at every point of a start, one more each time, until one starts;
    in a fresh interpreter, where no other thread opens or closes descriptors meanwhile."""
    proc = subprocess.run([sys.executable, "-c", _OUT_OF_DESCRIPTORS], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(Path(taskgym.__file__).parents[1]),
                               os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 0, proc.stderr
    swept, *lowered = proc.stdout.splitlines()
    outcome, spare = swept.split()
    assert outcome == "started" and int(spare) > 0, proc.stdout
    assert lowered == ["100 1024", "251 1024", "252 1024", "255 1024"], proc.stdout
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


_TAG = "t=$(declare -f __ts 2>/dev/null | grep -o '__TG_[0-9a-f]*' | head -1); "
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
    "the status function replaced": "__ts() { echo no; }; true",
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
    can be reopened through /proc by a child (a socket cannot)."""
    with backend.start(SandboxSpec()) as session:
        result = session.exec("ls /proc/self/fd; sleep 5 & sleep 0.1; ls /proc/$!/fd; kill $!; wait")
        assert sorted(set(result.stdout.split())) == ["0", "1", "2", "3"], result  # 3: ls's dir
        session.write_file("child.py", _CHILD)
        result = session.exec(_FORGERIES["a child opens the shell's descriptors"])
        # the shell holds its status socket (bash's saved copy of 251) while the command
        # runs, and a socket cannot be opened through /proc; what opens is /dev/null, the
        # output files and the shell's input pipe (writing there is typing a command)
        assert "'socket'" in result.stdout.split("held")[1].split("\n")[0], result
        assert "opened ['/.taskgym/e/err', '/.taskgym/o/out', '/dev/null', 'pipe']" in (
            result.stdout), result
        assert not result.restarted and result.exit_code == 0, result



def test_no_process_of_the_sandbox_can_connect_a_status_socket(backend: Backend) -> None:
    """The name the docker shell's helper connected to is removed before the shell runs
    anything (and a restarted shell's too), so no process of the sandbox can open a second
    status connection; locally the socket is a pair with no name at all."""
    with backend.start(SandboxSpec()) as session:
        for _ in range(2):
            listing = session.exec("ls -A /.taskgym; find / -xdev -type s 2>/dev/null")
            assert listing.exit_code == 0, listing
            assert "status-" not in listing.stdout, listing
            assert session.exec("exit 3").restarted

# -- forgeries by a process other than the shell -------------------------------------------
# A process the command leaves behind writes, later, the exact line the host expects for a
# later command: the tag (from `declare -f __ts`), a made-up status (42) and the number that
# command will carry. The local shell's status socket is reachable through bash's saved copy
# (fd 10 while a command runs), which a forked subshell inherits, which a command can give a
# program as its stdin (`prog <&10`), and which a child can take with pidfd_getfd (both
# backends: docker's shell has the same socket, connected by the status helper).
_FORGE = b"""
import ctypes, os, socket, stat, struct, sys, time
tag, delay, seq = sys.argv[1].encode(), float(sys.argv[2]), int(sys.argv[3])
if sys.argv[4:] == ["getfd"]:  # take the shell's own descriptors, as a debugger can
    libc, shell = ctypes.CDLL(None, use_errno=True), os.getppid()
    pidfd = os.pidfd_open(shell)
    fds = [libc.syscall(438, pidfd, int(name), 0) for name in os.listdir(f"/proc/{shell}/fd")]
else:
    fds = [int(name) for name in os.listdir("/proc/self/fd")]
time.sleep(delay)
targets = []  # logged before the writes: a write the host catches may get this killed at once
for fd in fds:
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            targets.append(fd)
    except OSError:
        pass
with open("forged.log", "a") as log:
    log.write(f"{targets}\\n")
for fd in targets:
    line = b"%s42 %d\\n" % (tag, seq)
    if sys.argv[4:] == ["claim"]:  # credentials naming the shell: refused without CAP_SYS_ADMIN
        cred = struct.pack("=iII", os.getppid(), os.getuid(), os.getgid())
        try:
            with socket.socket(fileno=os.dup(fd)) as sock:
                sock.sendmsg([line], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, cred)])
            continue
        except PermissionError:
            pass
    os.write(fd, line)
"""
# each {forge} is `python3 forge.py "$t" <delay> <seq>`, {line} writes the line with shell
# builtins on what the writer holds, {hold} gives a program the saved copy as its stdin
# (bash keeps a duplicate of its close-on-exec copy close-on-exec, but not one made for a
# command's stdin); all run as the session's first command (number 2)
_LATER_FORGERS = {
    "a background subshell, on the saved copy": "( sleep {delay}; {line} ) &",
    "an exec'd python3 holding the saved copy": "( exec {forge} {hold} ) &",
    "an exec'd sh holding the saved copy": "( exec sh -c 'sleep {delay}; {sh_line}' sh \"$t\" "
                                           "{hold} ) &",
    "a setsid daemon holding the saved copy": "setsid -f {forge} {hold}",
    "a nohup'd job holding the saved copy": "nohup {forge} {hold} &",
    "a child taking the shell's descriptors with pidfd_getfd": "{forge} getfd &",
    "a child claiming the shell's pid in its credentials": "{forge} claim {hold} &",
}


def _line_writers(seq: int) -> tuple[str, str]:
    """Shell code writing the forged line for ``seq``: with the subshell's builtins on every
    descriptor past 2 it holds (the saved copy), and from ``sh`` on its stdin (the saved
    copy)."""
    line = (f"for p in /proc/$BASHPID/fd/*; do fd=${{p##*/}}; [ $fd -gt 2 ] && "
            f"[ $fd != 255 ] && echo $fd >> forged.log && "
            f"printf '%s42 %d\\n' \"$t\" {seq} >&$fd; done 2>/dev/null")
    return line, f"echo 0 >> forged.log; printf \"%s42 %d\\n\" \"$1\" {seq} >&0"


# target: which command the line is forged for; the delay puts it while that command runs
_TARGETS = {
    "the next command, while it runs": (3, 0.5, False),
    "the one after, while it runs": (4, 1.0, False),
    "the next command, before it is sent": (3, 0.2, True),
}


@pytest.mark.escape
@pytest.mark.parametrize("target", sorted(_TARGETS))
@pytest.mark.parametrize("forger", sorted(_LATER_FORGERS))
def test_no_other_process_can_forge_a_later_commands_status(
        backend: Backend, forger: str, target: str) -> None:
    """Only the shell itself can end a command: a forged line from any other process of the
    sandbox is never taken as a later command's status (local: the socket's credentials name
    the writer; the line is a protocol violation, so the shell restarts), and the session
    goes on working (docker: the same socket, see docs/security.md#the-shells-channels)."""
    _forge_a_later_status(backend, forger, target, lambda session, command: session.exec(
        command, timeout=10))


@pytest.mark.escape
@pytest.mark.parametrize("forger", ["a background subshell, on the saved copy",
                                    "a setsid daemon holding the saved copy"])
def test_no_other_process_can_forge_a_status_awaited_with_aexec(
        backend: Backend, forger: str) -> None:
    """The same through ``aexec``, the event loop's driver of the protocol."""

    def run(session: Session, command: str) -> ExecResult:
        return asyncio.run(session.aexec(command, timeout=10))

    _forge_a_later_status(backend, forger, "the next command, while it runs", run)


def _forge_a_later_status(backend: Backend, forger: str, target: str,
                          run: Callable[[Session, str], ExecResult]) -> None:
    """Leave ``forger`` behind in the first command, forging ``target``'s status line; check
    every command's result (each run with ``run``) and that the forger did write."""
    seq, delay, early = _TARGETS[target]
    line, sh_line = _line_writers(seq)
    forge = f"python3 forge.py \"$t\" {delay} {seq}"
    command = _LATER_FORGERS[forger]
    hold = "0<&10"
    for name, value in (("{forge}", forge), ("{delay}", str(delay)), ("{line}", line),
                        ("{sh_line}", sh_line), ("{hold}", hold)):
        command = command.replace(name, value)
    command = _TAG + command + "\necho started"
    with backend.start(SandboxSpec()) as session:
        session.write_file("forge.py", _FORGE)
        first = run(session, command)  # number 2
        assert first.exit_code == 0 and "started" in first.stdout, first
        if early:
            time.sleep(0.6)  # the forged line waits on the channel before the command is sent
        if seq == 4:
            assert run(session, "echo three").stdout == "three\n"
        result = run(session, "sleep 2; echo slow")
        assert result.exit_code != 42, f"a forged status was taken for the command: {result}"
        if result.restarted:
            assert "status channel" in result.stderr, result
        else:
            assert result.exit_code == 0 and result.stdout == "slow\n", result
        results = [run(session, f"echo next-{i}") for i in range(3)]
        assert results[-1].stdout == "next-2\n" and not results[-1].restarted, (result, results)
        assert all(not r.restarted or "status channel" in r.stderr for r in results), results
        assert all(r.exit_code != 42 for r in results), results
        log = session.read_file("forged.log").decode()
        assert any(entry.strip("[] ") for entry in log.splitlines()), (
            f"the forger wrote no line (the attack did not run): {log!r}")


@pytest.mark.escape
def test_the_shells_death_is_seen_while_other_processes_hold_the_channel(backend: Backend) -> None:
    """A shell that exits is seen at once (its status, a restart) though processes it left
    hold the status channel (a subshell holds bash's saved copy, daemons were handed it as
    stdin): the host is never left waiting for the end of a channel that they keep open."""
    hold = "0<&10"
    with backend.start(SandboxSpec()) as session:
        first = session.exec(f"(sleep 60; true) & setsid -f sleep 60 {hold}; "
                             f"nohup sleep 60 {hold} & echo started")
        assert first.stdout == "started\n" and not first.restarted, first
        result = session.exec("exit 7", timeout=30)
        assert result.restarted and result.exit_code == 7, result
        assert result.duration_sec < 5 and not result.timed_out, result
        assert session.exec("echo back").stdout == "back\n"
