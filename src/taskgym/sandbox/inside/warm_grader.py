"""A pre-started, single-use grader: import the grader's libraries, wait for "go", run it once.

Runs as ``python3 -I -B warm_grader.py MODULES SCRIPT [ARGS...]`` in a fresh sandbox whose workspace
is still empty (see taskgym.sandbox.grading.warm). ``MODULES`` is a comma-separated list of modules to
import first (``SCRIPT``'s folder is on ``sys.path`` while they load). The channel to the host
is a unix SEQPACKET socket: the inherited descriptor ``TASKGYM_WARM_FD``, or the path
``TASKGYM_WARM_SOCKET`` to connect to.

1. Connect (first, so the host knows the sandbox is up), import ``MODULES``, send ``ready``
   (or ``error <traceback>``). A module that cannot be imported (an ImportError) is left to
   ``SCRIPT``, which imports it in its own setup and reports it as the cold path does.
2. Receive one message: JSON ``{"env": {...}, "fds": [names]}`` with as many descriptors. The
   host sends it only after it copied the workspace in. ``stdout`` and ``stderr`` replace
   descriptors 1 and 2; every other name becomes an environment variable holding the number
   of its descriptor (the grading runner's nonce, report and secret descriptors).
3. Close the channel (nothing run later can talk to the host through it) and run ``SCRIPT``
   as ``__main__``, as ``python3 -I -B SCRIPT ARGS`` would have. The process then exits and
   the host destroys the sandbox: it never serves a second grade.
"""

from __future__ import annotations

import importlib
import json
import os
import runpy
import socket
import sys
import time
import traceback


def connect() -> socket.socket:
    """The channel to the host, with this process's own output sent to /dev/null (a grade's
    output descriptors come in the go message)."""
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    if "TASKGYM_WARM_FD" in os.environ:
        fd = int(os.environ.pop("TASKGYM_WARM_FD"))
        return socket.socket(fileno=fd)
    path = os.environ.pop("TASKGYM_WARM_SOCKET")
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    deadline = time.monotonic() + 30
    while True:
        try:
            channel.connect(path)
            return channel
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def main() -> None:
    modules, script, *args = sys.argv[1:]
    channel = connect()
    folder = os.path.dirname(os.path.abspath(script))
    sys.path.insert(0, folder)
    try:
        preload(modules)
    except BaseException:
        channel.send(b"error " + traceback.format_exc()[-3000:].encode(errors="replace"))
        os._exit(1)
    sys.path.remove(folder)  # the script adds its own folder, as when run cold
    channel.send(b"ready")
    run_once(channel, script, args)


def preload(modules: str) -> None:
    """Import the comma-separated ``modules``; one that raises ImportError is skipped (the
    script's own import reports it, as it would cold: a grader dependency, not a start)."""
    for name in filter(None, modules.split(",")):
        try:
            importlib.import_module(name)
        except ImportError:
            continue


def run_once(channel: socket.socket, script: str, args: list[str]) -> None:
    """Receive the go message on ``channel``, close it, and run ``script`` as ``__main__``
    (step 2 and 3 above; the grader zygote's grades run this too)."""
    data, fds, _flags, _addr = socket.recv_fds(channel, 1 << 16, 64)
    channel.close()
    if not data:
        os._exit(1)  # the host went away: nothing to grade
    message = json.loads(data)
    names = message["fds"]
    for name, fd in zip(names, fds, strict=True):
        if name in ("stdout", "stderr"):
            os.dup2(fd, 1 if name == "stdout" else 2)
            os.close(fd)
        else:
            os.set_inheritable(fd, True)
            os.environ[name] = str(fd)
    os.environ.update(message["env"])
    sys.argv = [script, *args]
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main()
