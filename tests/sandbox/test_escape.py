"""An agent with a shell tries to get out of the sandbox; every attempt must fail.

Tests taking ``box`` or ``backend`` run on every backend (local and docker).

Each test plays the adversary from inside a session and then checks the host side.
CI runs this file as root and again as an unprivileged user.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgym.errors import SandboxPathError
from taskgym.sandbox import Backend, SandboxSpec, Session
from taskgym.sandbox.host.procs import sandbox_processes
from taskgym.sandbox.local import LocalBackend, LocalSession

pytestmark = [pytest.mark.escape]


@pytest.fixture()
def box(backend: Backend) -> Iterator[Session]:
    with backend.start(SandboxSpec(memory_mb=256, pids=64, disk_mb=16)) as session:
        yield session


def run(box: Session, command: str, timeout: float = 30) -> str:
    result = box.exec(command, timeout=timeout)
    return result.stdout + result.stderr


def test_host_files_outside_the_binds_are_invisible(box: Session) -> None:
    marker = Path.home() / f".taskgym-escape-marker-{os.getpid()}"
    marker.write_text("host secret")
    try:
        out = run(box, f"cat {marker} /etc/shadow /etc/hostname /root/.bashrc 2>&1; "
                       "ls /home /work /var /opt /srv 2>&1; "
                       "find / -xdev -name '*escape-marker*' 2>/dev/null; echo end")
        assert "host secret" not in out
        assert out.count("No such file or directory") >= 8, out
    finally:
        marker.unlink()


def test_proc_shows_no_host_process_and_no_way_to_its_root(box: Session) -> None:
    host_pid = os.getpid()
    out = run(box, f"ls /proc/{host_pid}/root 2>&1; cat /proc/1/cmdline | tr '\\0' ' '; "
                   "ls /proc/1/root/ 2>&1")
    assert f"/proc/{host_pid}/root" in out and "No such file" in out
    # pid 1 is the sandbox's own init; its root is the sandbox root, not the host's (in a
    # container, init belongs to another user and its root cannot be listed at all)
    assert "home" not in out
    assert "usr" in out or "/proc/1/root/': Permission denied" in out, out


def test_cannot_write_outside_the_workspace(box: Session) -> None:
    targets = ["/usr/bin/python3", "/usr/lib/evil", "/etc/passwd", "/bin/sh", "/evil",
               "/proc/sys/kernel/hostname", "/proc/sysrq-trigger", "/dev/evil"]
    out = run(box, "; ".join(f"(echo x > {t}) 2>&1 && echo WROTE {t}" for t in targets))
    assert "WROTE" not in out, out
    assert Path("/usr/lib/evil").exists() is False


def test_cannot_kill_or_signal_host_processes(box: Session) -> None:
    out = run(box, f"kill -9 {os.getpid()} 2>&1; kill -9 -1 2>&1; echo done")
    assert "done" in out  # we are alive to read this, and so is the host process


def test_no_network_beyond_loopback(box: Session) -> None:
    out = run(box, "cat /proc/net/route; cat /proc/net/dev | tail -n +3 | cut -d: -f1; "
                   "python3 -c \"import socket; socket.getaddrinfo('pypi.org', 443)\" 2>&1 | tail -1")
    assert "eth" not in out and "lo" in out
    assert "gaierror" in out or "Temporary failure" in out or "not known" in out, out


def test_host_loopback_services_are_unreachable(box: Session) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        out = run(box, f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), "
                       f"timeout=3)\" 2>&1 | tail -1")
        assert "ConnectionRefusedError" in out, out
    finally:
        server.close()


def test_kernel_attack_surface_is_filtered(box: Session) -> None:
    probe = """
import ctypes, errno, fcntl, os, termios
libc = ctypes.CDLL(None, use_errno=True)
def sys(nr, *args):
    r = libc.syscall(nr, *args)
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
import platform
nrs = {"x86_64": {"unshare": 272, "setns": 308, "mount": 165, "io_uring_setup": 425,
                  "bpf": 321, "keyctl": 250, "perf_event_open": 298, "userfaultfd": 323,
                  "clone3": 435, "open_by_handle_at": 304},
       "aarch64": {"unshare": 97, "setns": 268, "mount": 40, "io_uring_setup": 425,
                   "bpf": 280, "keyctl": 219, "perf_event_open": 241, "userfaultfd": 282,
                   "clone3": 435, "open_by_handle_at": 265}}[platform.machine()]
for name, nr in nrs.items():
    print(name, sys(nr, 0, 0, 0, 0, 0))
r, w = os.pipe()
try:
    fcntl.ioctl(w, termios.TIOCSTI, b"x")
    print("TIOCSTI ok")
except OSError as e:
    print("TIOCSTI", errno.errorcode[e.errno])
"""
    box.write_file("probe.py", probe.encode())
    lines = dict(line.split(" ", 1) for line in run(box, "python3 probe.py").splitlines())
    for name in ("unshare", "setns", "mount", "io_uring_setup", "bpf", "keyctl",
                 "perf_event_open", "userfaultfd", "open_by_handle_at"):
        assert lines[name] == "EPERM", (name, lines)
    assert lines["clone3"] == "ENOSYS"
    assert lines["TIOCSTI"] == "EPERM"  # without the filter a pipe answers ENOTTY


def test_no_new_user_namespace_or_privileges(box: Session) -> None:
    out = run(box, "unshare -r id 2>&1; unshare -U id 2>&1; "
                   "python3 -c 'import os; os.setuid(0)' 2>&1 | tail -1")
    assert "uid=0" not in out
    assert "PermissionError" in out or "Invalid argument" in out  # uid 0 is not even mapped


@pytest.mark.sandbox
def test_fork_bomb_is_contained(local_backend: LocalBackend) -> None:
    box = local_backend.start(SandboxSpec(pids=64))
    try:
        assert isinstance(box, LocalSession) and box._proc is not None
        pidns = os.readlink(f"/proc/{box._proc.init_pid}/ns/pid").removeprefix("pid:[")[:-1]
        assert len(sandbox_processes(pidns)) >= 2  # init and the shell: the count is real
        box.exec("bomb() { bomb | bomb & }; bomb", timeout=5)
        peak = 0
        for _ in range(20):
            peak = max(peak, len(sandbox_processes(pidns)))
            time.sleep(0.05)
        # the limit, plus bwrap's outer process outside the cgroup; rlimits count per user
        assert peak <= (64 + 1 if box.limits_enforced_by == "cgroup" else 2 * 64), peak
        with local_backend.start(SandboxSpec()) as other:  # the host still starts sandboxes
            assert other.exec("echo fine").stdout == "fine\n"
    finally:
        box.close()
    assert not sandbox_processes(pidns)


def test_memory_bomb_is_contained(box: Session) -> None:
    result = box.exec("python3 -c 'a = []\nwhile True: a.append(bytearray(2**24))'", timeout=60)
    assert result.exit_code != 0
    assert box.exec("echo alive").stdout == "alive\n"


def test_disk_fill_is_contained(box: Session) -> None:
    result = box.exec("cat /dev/zero > fill; du -sm fill")
    assert "No space left" in result.stderr and int(result.stdout.split()[0]) <= 16, result
    # /tmp and /dev/shm are memory: their size caps or the memory limit stop the writer
    # (the OOM killer may take the shell too, which is then replaced)
    for target in ("/tmp/fill", "/dev/shm/fill"):
        result = box.exec(f"cat /dev/zero > {target}", timeout=60)
        assert result.exit_code != 0 and not result.timed_out, result
    assert box.exec("echo alive").stdout == "alive\n"
    assert int(run(box, "du -sm /app").split()[0]) <= 16


def test_endless_output_is_contained(box: Session) -> None:
    result = box.exec("cat /dev/urandom", timeout=60)
    assert result.truncated and result.duration_sec < 30
    assert len(result.stdout) <= 2 * box.spec.output_limit_bytes + 100


def test_symlink_planted_for_the_file_tools(box: Session) -> None:
    box.exec("ln -s / root; ln -s /proc/self/root/etc etc; ln -sf ../../../../etc/passwd up")
    for path in ("root/etc/passwd", "etc/passwd", "up", "/app/../etc/passwd"):
        with pytest.raises(SandboxPathError):
            box.read_file(path)
    with pytest.raises(SandboxPathError):
        box.write_file("root/tmp/planted", b"x")


def test_processes_do_not_outlive_the_session(backend: Backend) -> None:
    box = backend.start(SandboxSpec())
    box.exec("setsid sh -c 'sleep 777 & sleep 778' & nohup sleep 779 >/dev/null 2>&1 & "
             "(trap '' HUP TERM; exec sleep 780) & echo started")
    box.close()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        alive = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmdline(p).startswith(
            ("sleep 777", "sleep 778", "sleep 779", "sleep 780"))]
        if not alive:
            break
        time.sleep(0.05)
    assert not alive


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""
