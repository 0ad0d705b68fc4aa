"""``LocalBackend.check()`` while mounts come and go (a Docker engine creating and removing
containers' overlays): its probe binds only the system a sandbox sees, never ``/`` with every
submount, so a mount that goes while bwrap remounts the tree read-only cannot fail it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.sandbox

SRC = Path(__file__).resolve().parents[2] / "src"

# Runs in a mount namespace of its own (unshare --mount), every mount in it private, so nothing
# reaches the host's: a shared folder whose submounts two threads mount and unmount, as the engine
# does under /var/lib/docker, which the probes' namespaces (bwrap's, slaves) follow.
CHURN = textwrap.dedent("""\
    import ctypes, json, os, shutil, subprocess, sys, tempfile, threading
    from taskgym.sandbox.local import LocalBackend

    libc = ctypes.CDLL(None, use_errno=True)
    base = tempfile.mkdtemp(prefix="taskgym-mounts-", dir="/var/tmp")
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    subprocess.run(["mount", "--bind", base, base], check=True)
    subprocess.run(["mount", "--make-shared", base], check=True)
    stop = threading.Event()

    def churn(k):
        folders = [f"{base}/{k}-{i}".encode() for i in range(50)]
        for folder in folders:
            os.mkdir(folder)
        while not stop.is_set():
            for folder in folders:
                libc.mount(b"none", folder, b"tmpfs", 0, None)
            for folder in folders:
                libc.umount2(folder, 0)

    threads = [threading.Thread(target=churn, args=(k,)) for k in range(2)]
    for thread in threads:
        thread.start()
    whole_root = [sys.argv[1], "--unshare-all", "--ro-bind", "/", "/", "--die-with-parent", "true"]
    tries = 0
    while tries < 200 and subprocess.run(whole_root, capture_output=True).returncode == 0:
        tries += 1
    problems = [p for p in (LocalBackend.check() for _ in range(40)) if p is not None]
    stop.set()
    for thread in threads:
        thread.join()
    subprocess.run(["umount", base], check=True)
    shutil.rmtree(base)
    print(json.dumps({"root_bind_failed": tries < 200, "problems": problems}))
    """)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("bwrap") is None,
                    reason="making mounts in a private mount namespace needs root, unshare and bwrap")
def test_check_passes_while_mounts_come_and_go() -> None:
    run = subprocess.run(["unshare", "--mount", sys.executable, "-c", CHURN, str(shutil.which("bwrap"))],
                         capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(SRC)})
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.splitlines()[-1])
    assert found["root_bind_failed"], "the churn never broke a bind of / (the test would prove nothing)"
    assert found["problems"] == [], found["problems"]
