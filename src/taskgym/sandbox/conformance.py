"""The conformance suite every sandbox backend must pass.

Each check takes a backend, starts what it needs, and raises ``AssertionError`` with a
message on failure. Run them all with :func:`check_backend`; the test suite runs each
one as its own test for every backend (and again as an unprivileged user)::

    from taskgym.sandbox.conformance import check_backend
    failures = check_backend(my_backend)   # {} when the backend conforms
"""

from __future__ import annotations

import os
import pickle
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from taskgym.errors import ConfigError
from taskgym.sandbox.base import Backend, SandboxSpec

__all__ = ["CHECKS", "check_backend"]

Check = Callable[[Backend], None]
CHECKS: dict[str, Check] = {}


def _check(fn: Check) -> Check:
    CHECKS[fn.__name__.removeprefix("check_")] = fn
    return fn


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


@_check
def check_exec_output_and_status(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("echo out; echo err >&2; exit_code() { return 3; }; exit_code")
        _expect(r.stdout == "out\n", f"stdout was {r.stdout!r}")
        _expect(r.stderr == "err\n", f"stderr was {r.stderr!r}")
        _expect(r.exit_code == 3, f"exit code was {r.exit_code}")
        r = s.exec("printf 'no newline'")
        _expect(r.stdout == "no newline", f"output without newline came back as {r.stdout!r}")


@_check
def check_short_and_long_commands_agree(backend: Backend) -> None:
    """A backend may carry short commands differently; the shell must not tell the difference."""
    with backend.start(SandboxSpec()) as s:
        for command in ("return 3", 'echo "[$1] $#"', "local v=1; echo $v", "false",
                        "echo 'it''s' \\\\ \"x\"", "echo é", "ls -d /app /nonexistent", "-x",
                        ".", "%1", "v=2"):
            short = s.exec(command)
            long = s.exec(command + " # " + "padding " * 20)
            _expect((short.stdout, _shell_message(short.stderr), short.exit_code)
                    == (long.stdout, _shell_message(long.stderr), long.exit_code),
                    f"{command!r}: {short} differs from {long}")
        _expect(s.exec("return 3").exit_code == 3 and not s.exec("return 3").restarted,
                "return did not end just the command")


def _shell_message(stderr: str) -> str:
    """A shell error without where bash says it read the command (``bash: line 5: ``)."""
    return re.sub(r"(?m)^[^:\n]*: line \d+: ", "", stderr)


@_check
def check_shell_state_persists(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.exec("mkdir -p sub && cd sub && export GREETING=hello && count=41")
        r = s.exec('echo "$PWD $GREETING $((count + 1))"')
        _expect(r.stdout.strip() == "/app/sub hello 42", f"state was lost: {r.stdout!r}")
        s.exec("declare -A short=([k]=v1)")  # declare at a prompt makes globals
        s.exec("declare -A long=([k]=v2) # " + "padding " * 20)
        r = s.exec('echo "${short[k]} ${long[k]}"')
        _expect(r.stdout.strip() == "v1 v2", f"declared variables were lost: {r.stdout!r}")


@_check
def check_stdin_is_not_the_control_channel(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("cat; read -r line; echo read=$?", timeout=5)
        _expect(not r.timed_out and "read=1" in r.stdout, f"a command read stdin: {r}")
        _expect(s.exec("echo still here").stdout == "still here\n", "the protocol broke")


@_check
def check_timeout_kills_what_the_command_started(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.exec("sleep 300 & echo started")  # started by an earlier command: must survive
        time.sleep(0.05)  # process start times have a resolution of one clock tick (10 ms)
        r = s.exec("sleep 301 & sleep 302", timeout=1)
        _expect(r.timed_out and r.exit_code == 124, f"no timeout reported: {r}")
        _expect(r.duration_sec < 10, f"the timeout took {r.duration_sec:.1f}s")
        ps = s.exec("ps -eo args").stdout
        _expect("sleep 301" not in ps and "sleep 302" not in ps, f"processes survived:\n{ps}")
        _expect("sleep 300" in ps, f"an earlier background job was killed:\n{ps}")


@_check
def check_shell_builtin_loop_is_stopped(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.write_file("kept.txt", b"kept")
        r = s.exec("while :; do :; done", timeout=1)
        _expect(r.timed_out and r.restarted, f"a hung shell was not replaced: {r}")
        _expect(s.exec("cat kept.txt").stdout == "kept", "files were lost when the shell restarted")


@_check
def check_shell_exit_recovers(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.exec("echo data > file.txt")
        r = s.exec("exit 7")
        _expect(r.restarted and r.exit_code == 7, f"exit was not reported: {r}")
        r = s.exec("pwd; cat file.txt")
        _expect(r.stdout == "/app\ndata\n", f"after the shell exited: {r}")


@_check
def check_killing_every_process_recovers(backend: Backend) -> None:
    """``kill -9 -1`` signals everything the sandbox user may: it must end the user's
    processes, never the sandbox holding them (a grader clears a sandbox this way)."""
    with backend.start(SandboxSpec()) as s:
        s.write_file("kept.txt", b"kept")
        s.exec("sleep 100 & kill -9 -1; echo after")
        r = s.exec("cat kept.txt")
        _expect(r.stdout == "kept" and r.exit_code == 0, f"after kill -9 -1: {r}")
    result, _ = backend.run(SandboxSpec(), ["/bin/bash", "-c", "sleep 100 & kill -9 -1; echo survived"],
                            timeout=30)
    _expect(result.stdout == "survived\n", f"a one-shot run that ran kill -9 -1: {result}")


@_check
def check_output_is_capped(backend: Backend) -> None:
    spec = SandboxSpec(output_limit_bytes=4096, stream_limit_bytes=1 << 20)
    with backend.start(spec) as s:
        r = s.exec("head -c 300000 /dev/zero | tr '\\0' x; echo; echo tail-marker")
        _expect(r.truncated and len(r.stdout) < 5000, f"{len(r.stdout)} characters came back")
        _expect(r.stdout.rstrip().endswith("tail-marker"), "the tail of the output was lost")
        r = s.exec("yes", timeout=30)
        _expect(r.truncated and r.duration_sec < 20, f"endless output was not stopped: {r.duration_sec}")
        _expect(s.exec("echo ok").stdout == "ok\n", "the session did not survive endless output")


@_check
def check_binary_and_unicode_output(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("echo 'héllo ✓ 漢字'; printf '\\377\\376\\n'")
        _expect(r.stdout.startswith("héllo ✓ 漢字\n"), f"unicode mangled: {r.stdout!r}")
        _expect("\ufffd" in r.stdout, "invalid UTF-8 was not replaced")


@_check
def check_file_tools_roundtrip(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.write_file("deep/er/file.txt", "ünïcode\n".encode())
        s.write_file("/app/run.sh", b"#!/bin/sh\necho ran\n", mode=0o755)
        _expect(s.read_file("deep/er/file.txt") == "ünïcode\n".encode(), "read back differs")
        _expect(s.exec("./run.sh").stdout == "ran\n", "the executable bit was lost")
        _expect(s.read_file("/app/deep/er/file.txt", limit=3) == "ün".encode()[:3], "limit ignored")


@_check
def check_file_tools_stay_in_the_workspace(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.exec("ln -s /etc/passwd pw; ln -s / rootlink; mkdir d; ln -s /tmp d/t; mkfifo fifo")
        for path in ("pw", "rootlink/etc/passwd", "../etc/passwd", "/etc/passwd", "d/t/x",
                     "fifo"):
            try:
                s.read_file(path)
            except (ConfigError, OSError):
                continue
            raise AssertionError(f"read_file({path!r}) was allowed")
        for path in ("pw", "rootlink/x", "d/t/x", "../x", "/tmp/x"):
            try:
                s.write_file(path, b"x")
            except (ConfigError, OSError):
                continue
            raise AssertionError(f"write_file({path!r}) was allowed")


@_check
def check_export_after_stop(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        s.exec("mkdir -p a/b && echo 1 > a/b/one && ln -s /etc/shadow link && chmod 700 a")
        s.exec("sleep 100 &")
        s.stop()
        _expect(not s.alive, "processes survived stop()")
        with tempfile.TemporaryDirectory() as tmp:
            dest = Path(tmp) / "out"
            s.export_workspace(dest)
            _expect((dest / "a/b/one").read_text() == "1\n", "exported content differs")
            _expect((dest / "link").is_symlink() and os.readlink(dest / "link") == "/etc/shadow",
                    "a symbolic link was not copied as a link")


@_check
def check_seeded_workspace(backend: Backend) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        seed = Path(tmp)
        (seed / "pkg").mkdir()
        (seed / "pkg" / "mod.py").write_text("X = 1\n")
        (seed / "tool.sh").write_text("#!/bin/sh\necho tool\n")
        (seed / "tool.sh").chmod(0o755)
        with backend.start(SandboxSpec(), seed) as s:
            r = s.exec("cat pkg/mod.py; ./tool.sh")
            _expect(r.stdout == "X = 1\ntool\n", f"seed not copied: {r}")


@_check
def check_filesystem_is_minimal_and_read_only(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("ls /; ls /home /root /work /srv /var /etc/shadow 2>&1; "
                   "touch /usr/x /etc/x /x 2>&1; echo done")
        for name in ("/home", "/root", "/work", "/etc/shadow"):
            _expect(f"cannot access '{name}'" in r.stdout, f"{name} is visible:\n{r.stdout}")
        _expect(r.stdout.count("touch: cannot touch") == 3, f"a read-only path was writable:\n{r.stdout}")
        _expect(s.exec("touch /app/ok /tmp/ok && echo yes").stdout == "yes\n",
                "/app or /tmp is not writable")


@_check
def check_identity_and_privileges(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        status = s.exec("cat /proc/self/status").stdout
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        _expect(fields["CapEff"].strip() == "0000000000000000", "capabilities remain")
        _expect(fields["CapBnd"].strip() == "0000000000000000", "bounding set not empty")
        _expect(fields["NoNewPrivs"].strip() == "1", "no_new_privs is not set")
        _expect(fields["Seccomp"].strip() == "2", "no seccomp filter")
        _expect(fields["Uid"].split()[0] != "0", "the sandbox runs as uid 0")


@_check
def check_network_is_loopback_only(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
        _expect(r.stdout.split() == ["lo"], f"interfaces: {r.stdout.split()}")
        r = s.exec("python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); "
                   "s.listen(); c=socket.create_connection(s.getsockname()); print('loopback ok')\"")
        _expect(r.stdout == "loopback ok\n", f"loopback does not work: {r}")


@_check
def check_processes_are_private(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("ls /proc | grep -c '^[0-9]'")
        _expect(int(r.stdout.strip() or 99) <= 6, f"host processes are visible ({r.stdout.strip()})")


@_check
def check_memory_limit(backend: Backend) -> None:
    with backend.start(SandboxSpec(memory_mb=128)) as s:
        r = s.exec("python3 -c \"x = bytearray(600 * 2**20); x[::4096] = b'x' * len(x[::4096]); "
                   "print('allocated')\"", timeout=60)
        _expect("allocated" not in r.stdout and r.exit_code != 0, f"600 MB fitted in 128 MB: {r}")
        _expect(s.exec("echo alive").stdout == "alive\n", "the session died of the memory bomb")


_FORK_BOMB = """
import os, signal, time
children = []
try:
    while len(children) < 500:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        children.append(pid)
except OSError:
    pass
print(len(children))
for pid in children:
    os.kill(pid, signal.SIGKILL)
"""


@_check
def check_process_limit(backend: Backend) -> None:
    with backend.start(SandboxSpec(pids=32)) as s:
        s.write_file("bomb.py", _FORK_BOMB.encode())
        r = s.exec("python3 bomb.py", timeout=60)
        forked = int(r.stdout.strip() or "999")
        # rlimits count every process of the user, so the bound is approximate there
        bound = 32 if s.limits_enforced_by == "cgroup" else 2 * 32
        _expect(forked < bound, f"{forked} processes were forked under a limit of 32 "
                                f"(enforced by {s.limits_enforced_by})")
        time.sleep(0.2)
        _expect(s.exec("echo alive").stdout == "alive\n", "the session died of the fork bomb")


@_check
def check_cpu_quota(backend: Backend) -> None:
    with backend.start(SandboxSpec(cpus=0.25)) as s:
        if not s.cpu_limited:  # the rlimit fallback has no CPU quota (docs/security.md)
            _expect(s.limits_enforced_by == "rlimit",
                    f"a sandbox limited by {s.limits_enforced_by} did not apply its CPU quota")
            return
        s.exec("for i in 1 2; do timeout 1.5 sh -c 'while :; do :; done' & done; wait", timeout=30)
        s.stop()
        used = s.usage().cpu_sec
        _expect(0 < used < 0.6, f"two busy loops for 1.5 s used {used:.2f} CPU-seconds under "
                                "a quota of 0.25 cores")


@_check
def check_disk_cap(backend: Backend) -> None:
    with backend.start(SandboxSpec(disk_mb=8)) as s:
        r = s.exec("dd if=/dev/zero of=big bs=1M count=64 2>&1; du -m big | cut -f1")
        used = int(r.stdout.strip().splitlines()[-1])
        _expect(used <= 8 and "No space left" in r.stdout, f"wrote {used} MB under an 8 MB cap")
        try:
            s.write_file("more", b"x" * (16 << 20))
        except (OSError, ConfigError):
            pass
        else:
            raise AssertionError("write_file went past the disk cap")


@_check
def check_sessions_are_isolated(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as a, backend.start(SandboxSpec()) as b:
        a.exec("echo mine > secret; sleep 100 &")
        r = b.exec("cat secret 2>&1; ps -eo args | grep -c '^sleep 100'")
        _expect("No such file" in r.stdout and r.stdout.strip().endswith("0"),
                f"sessions share state: {r.stdout!r}")


@_check
def check_close_leaves_nothing(backend: Backend) -> None:
    s = backend.start(SandboxSpec())
    s.exec("setsid sleep 500 & nohup sleep 501 >/dev/null 2>&1 & disown; echo x")
    before = _host_sleepers()
    s.close()
    s.close()  # idempotent
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _host_sleepers() & before:
        time.sleep(0.05)
    _expect(not (_host_sleepers() & before), "a process outlived close()")


@_check
def check_one_shot_run(backend: Backend) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        seed = Path(tmp)
        (seed / "in.txt").write_text("seeded\n")
        read_fd, write_fd = os.pipe()
        secret = tempfile.TemporaryFile()  # read and write, as a grader hands over a reference
        secret.write(b"skipped\nsecret\n")
        secret.flush()
        secret.seek(8)
        try:
            result, usage = backend.run(
                SandboxSpec(env={"REPORT_FD": str(write_fd), "SECRET_FD": str(secret.fileno())}),
                ["/bin/bash", "-c",
                 'cat in.txt; cat <&"$SECRET_FD"; echo channel >&"$REPORT_FD"; exit 4'],
                seed=seed, timeout=30, pass_fds=[write_fd, secret.fileno()])
        finally:
            os.close(write_fd)
            secret.close()
        with os.fdopen(read_fd) as channel:
            _expect(channel.read() == "channel\n", "pass_fds did not reach the command")
        _expect(result.stdout == "seeded\nsecret\n" and result.exit_code == 4,
                f"one-shot run: {result}")
        result, _ = backend.run(SandboxSpec(), ["/bin/sh", "-c", "sleep 100 & sleep 100"],
                                timeout=1)
        _expect(result.timed_out and result.duration_sec < 10, f"one-shot timeout: {result}")


_LEAK_PROBE = r"""
import os, sys
secrets = [bytes.fromhex(word)[::-1] for word in sys.argv[1:]]  # never whole in argv or memory
skip = {"mem", "pagemap", "clear_refs", "kpageflags", "kpagecount"}
found = []

def look(path, data):
    for secret in secrets:
        if secret in data:
            found.append(path)

def listing(folder):
    try:
        return [f"{folder}/{name}" for name in os.listdir(folder)]
    except OSError:
        return []

def read(path):
    try:
        look(path, os.fsencode(os.readlink(path)))
        return  # a link (cwd, exe, root...): its target is what it shows
    except OSError:
        pass
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        look(path, os.read(fd, 1 << 20))
    except OSError:
        pass
    finally:
        os.close(fd)

def scan(folder):
    for path in listing(folder):
        name = path.rsplit("/", 1)[1]
        if name in skip:
            continue
        if name in ("fd", "map_files", "ns"):  # links only: opening them would read pipes
            for link in listing(path):
                try:
                    look(link, os.fsencode(os.readlink(link)))
                except OSError:
                    pass
        elif name == "task":
            for task in listing(path):
                scan(task)
        elif name in ("fdinfo", "net", "attr"):
            for item in listing(path):
                read(item)
        else:
            read(path)

for entry in os.listdir("/proc"):
    if entry.isdigit():
        scan(f"/proc/{entry}")
    elif entry not in ("kcore", "kmsg", "kpagecount", "kpageflags", "kpagecgroup", "self",
                       "thread-self", "sysrq-trigger"):
        if os.path.isfile(f"/proc/{entry}"):
            read(f"/proc/{entry}")
look("the environment", b"\0".join(os.environb.get(k, b"") + k for k in os.environb))
print("pids", len([e for e in os.listdir("/proc") if e.isdigit()]), "leaks", sorted(set(found)))
"""

_LEAK_CONTROLLER = r"""
import pickle, sys
backend = pickle.loads(sys.stdin.buffer.read())
from taskgym.sandbox.base import SandboxSpec
probe, words = sys.argv[1], sys.argv[3:]  # argv[2] is the planted argument
with backend.start(SandboxSpec()) as session:
    session.write_file("probe.py", probe.encode())
    session.exec("sleep 300 & (sleep 301 | cat) & echo started")
    print("session:", session.exec(f"python3 probe.py {' '.join(words)}").stdout.strip())
result, _ = backend.run(SandboxSpec(), ["/usr/bin/python3", "-c", probe, *words], timeout=60)
print("run:", result.stdout.strip(), result.stderr.strip()[-300:])
close = getattr(backend, "close", None)
if close is not None:
    close()
"""


@_check
def check_controller_secrets_do_not_reach_the_sandbox(backend: Backend) -> None:
    """A controller with a secret environment variable, a secret argument and a secret in its
    temporary folder's path starts a session and a one-shot run; nothing readable under /proc
    (environ, cmdline, maps, mountinfo, links of every visible pid and thread) nor the
    environment holds any of them."""
    env_secret = "tg-env-" + secrets.token_hex(12)
    arg_secret = "tg-arg-" + secrets.token_hex(12)
    path_secret = "tg-path-" + secrets.token_hex(12)  # the controller's TMPDIR holds it
    words = [secret.encode()[::-1].hex() for secret in (env_secret, arg_secret, path_secret)]
    with tempfile.TemporaryDirectory(prefix=path_secret) as tmpdir:
        proc = subprocess.run(
            [sys.executable, "-c", _LEAK_CONTROLLER, _LEAK_PROBE, arg_secret, *words],
            input=pickle.dumps(backend), capture_output=True, timeout=300,
            env={**os.environ, "TASKGYM_PLANTED_SECRET": env_secret, "TMPDIR": tmpdir,
                 "TASKGYM_PLANTED_PATH": f"/nonexistent/{arg_secret}"})
    out = proc.stdout.decode(errors="replace")
    _expect(proc.returncode == 0, f"the controller failed: {proc.stderr.decode(errors='replace')}")
    reports = [line for line in out.splitlines() if line.startswith(("session:", "run:"))]
    _expect(len(reports) == 2 and all(" pids " in f" {line} " for line in reports),
            f"the probe did not report:\n{out}")
    for line in reports:
        _expect(line.split(" leaks ", 1)[1].startswith("[]"), f"secrets leaked: {line}")


def _host_sleepers() -> set[int]:
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmd = Path(f"/proc/{entry.name}/cmdline").read_bytes()
            except OSError:
                continue
            if cmd.startswith(b"sleep\x0050"):
                found.add(int(entry.name))
    return found


def check_backend(backend: Backend) -> dict[str, str]:
    """Run every check; returns ``{check name: failure message}`` (empty when conformant)."""
    failures = {}
    for name, check in CHECKS.items():
        try:
            check(backend)
        except AssertionError as exc:
            failures[name] = str(exc)
    return failures
