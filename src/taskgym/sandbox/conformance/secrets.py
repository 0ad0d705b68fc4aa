"""Conformance: one-shot runs take secrets by descriptor, and nothing of the controller's
(variables, arguments, paths) reaches the sandbox."""

from __future__ import annotations

import os
import pickle
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

from taskgym.sandbox.base import Backend, SandboxSpec
from taskgym.sandbox.conformance.registry import check, expect


@check
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
            expect(channel.read() == "channel\n", "pass_fds did not reach the command")
        expect(result.stdout == "seeded\nsecret\n" and result.exit_code == 4,
                f"one-shot run: {result}")
        result, _ = backend.run(SandboxSpec(), ["/bin/sh", "-c", "sleep 100 & sleep 100"],
                                timeout=1)
        expect(result.timed_out and result.duration_sec < 10, f"one-shot timeout: {result}")


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


@check
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
    expect(proc.returncode == 0, f"the controller failed: {proc.stderr.decode(errors='replace')}")
    reports = [line for line in out.splitlines() if line.startswith(("session:", "run:"))]
    expect(len(reports) == 2 and all(" pids " in f" {line} " for line in reports),
            f"the probe did not report:\n{out}")
    for line in reports:
        expect(line.split(" leaks ", 1)[1].startswith("[]"), f"secrets leaked: {line}")
