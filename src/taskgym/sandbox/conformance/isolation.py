"""Conformance: what the sandbox can see and reach (file system, identity, network,
processes, other sessions), and that close() leaves nothing."""

from __future__ import annotations

import time

from taskgym.sandbox.base import Backend, SandboxSpec
from taskgym.sandbox.conformance.registry import check, expect
from taskgym.sandbox.host.procs import running_argv


@check
def check_filesystem_is_minimal_and_read_only(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("ls /; ls /home /root /work /srv /var /etc/shadow 2>&1; "
                   "touch /usr/x /etc/x /x 2>&1; echo done")
        for name in ("/home", "/root", "/work", "/etc/shadow"):
            expect(f"cannot access '{name}'" in r.stdout, f"{name} is visible:\n{r.stdout}")
        expect(r.stdout.count("touch: cannot touch") == 3, f"a read-only path was writable:\n{r.stdout}")
        expect(s.exec("touch /app/ok /tmp/ok && echo yes").stdout == "yes\n",
                "/app or /tmp is not writable")


@check
def check_identity_and_privileges(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        status = s.exec("cat /proc/self/status").stdout
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        expect(fields["CapEff"].strip() == "0000000000000000", "capabilities remain")
        expect(fields["CapBnd"].strip() == "0000000000000000", "bounding set not empty")
        expect(fields["NoNewPrivs"].strip() == "1", "no_new_privs is not set")
        expect(fields["Seccomp"].strip() == "2", "no seccomp filter")
        expect(fields["Uid"].split()[0] != "0", "the sandbox runs as uid 0")


@check
def check_network_is_loopback_only(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '")
        expect(r.stdout.split() == ["lo"], f"interfaces: {r.stdout.split()}")
        r = s.exec("python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); "
                   "s.listen(); c=socket.create_connection(s.getsockname()); print('loopback ok')\"")
        expect(r.stdout == "loopback ok\n", f"loopback does not work: {r}")


@check
def check_processes_are_private(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as s:
        r = s.exec("ls /proc | grep -c '^[0-9]'")
        expect(int(r.stdout.strip() or 99) <= 6, f"host processes are visible ({r.stdout.strip()})")


@check
def check_sessions_are_isolated(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as a, backend.start(SandboxSpec()) as b:
        a.exec("echo mine > secret; sleep 100 &")
        r = b.exec("cat secret 2>&1; ps -eo args | grep -c '^sleep 100'")
        expect("No such file" in r.stdout and r.stdout.strip().endswith("0"),
                f"sessions share state: {r.stdout!r}")


@check
def check_close_leaves_nothing(backend: Backend) -> None:
    s = backend.start(SandboxSpec())
    s.exec("setsid sleep 500 & nohup sleep 501 >/dev/null 2>&1 & disown; echo x")
    before = host_sleepers()
    s.close()
    s.close()  # idempotent
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and host_sleepers() & before:
        time.sleep(0.05)
    expect(not (host_sleepers() & before), "a process outlived close()")


def host_sleepers() -> set[int]:
    """The host's ``sleep 50x`` processes (what these checks plant)."""
    return running_argv(b"sleep\x0050")