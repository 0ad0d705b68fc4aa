"""Host-side views of processes: start times, children, the members of a pid namespace.

Pids are reused, so a process is named by its pid and its start time (clock ticks since boot,
from ``/proc/<pid>/stat``); a kill is only ever sent to a pid whose start time still matches.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from pathlib import Path

__all__ = ["CLK_TCK", "SANDBOX_UID", "children", "descendants", "proc_stat", "running_argv",
           "sandbox_processes", "start_tick", "ticks_at", "wait_gone"]

SANDBOX_UID = 1000
"""The uid the agent's processes run as, in every backend."""
CLK_TCK = os.sysconf("SC_CLK_TCK")
_GONE = frozenset({errno.ENOENT, errno.ESRCH})
"""What reading a process's /proc entry fails with once it has exited."""
_NOT_OURS = _GONE | {errno.EACCES, errno.EPERM}
"""... and what it fails with for another user's process (skipped when scanning /proc)."""
_NO_DESCRIPTOR = frozenset({errno.EMFILE, errno.ENFILE})


def _skip(exc: OSError, expected: frozenset[int]) -> None:
    """Return if ``exc`` is one of the ``expected`` failures, else raise it: running out of
    descriptors must not read as "no such process" (a kill loop would stop early, a
    check would fail with a misleading message)."""
    if exc.errno not in expected:
        raise exc


def running_argv(prefix: bytes) -> set[int]:
    """Pids of the host's processes whose command line (``/proc/<pid>/cmdline``: arguments
    ending in NUL) starts with ``prefix``; a sandbox's processes are among them."""
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if Path(entry.path, "cmdline").read_bytes().startswith(prefix):
                    found.add(int(entry.name))
            except OSError as exc:
                _skip(exc, _NOT_OURS)
    return found


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (state first, start time at
    index 19), or ``None`` when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError as exc:
        _skip(exc, _GONE)
        return None
    return stat[stat.rindex(")") + 2 :].split()


def start_tick(pid: int) -> int | None:
    """When ``pid`` started, or ``None`` once it has exited (a zombie counts as exited)."""
    fields = proc_stat(pid)
    return None if fields is None or fields[0] in ("Z", "X") else int(fields[19])


def wait_gone(pid: int, start: int | None, timeout: float = 5.0) -> None:
    """Wait until the sandbox's init (and with it every process it had) has exited.

    When init dies the kernel kills the rest of the pid namespace, and init's exit
    completes only once they are gone.

    Out of descriptors, init's start time cannot be read; the wait goes on (without a kill,
    which needs that time to be sure of its target) while other closes free some.
    """
    deadline = time.monotonic() + timeout
    while start is not None and time.monotonic() < deadline:
        try:
            if start_tick(pid) != start:
                return
        except OSError as exc:
            _skip(exc, _NO_DESCRIPTOR)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.0005)


def ticks_at(monotonic: float) -> int:
    """The clock tick since boot (as in /proc/<pid>/stat) of a ``time.monotonic()`` reading."""
    offset = time.clock_gettime(time.CLOCK_BOOTTIME) - time.monotonic()
    return int((monotonic + offset) * CLK_TCK)


def children(pid: int) -> list[int]:
    """The pids of ``pid``'s children (its main thread's), or ``[]``."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError as exc:
        _skip(exc, _GONE)
        return []


def descendants(pid: int) -> list[int]:
    """The pids of ``pid``'s live children, theirs and so on (those of every thread; zombies
    left out), sorted: a few reads for a small tree, where :func:`sandbox_processes` reads
    every process's namespace. Within a pid namespace whose init is ``pid`` that is every other process:
    orphans are given to that init (or to a subreaper below it). A process that exits or
    forks meanwhile may be missed or listed, as with any reading of ``/proc``."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            threads = os.listdir(f"/proc/{parent}/task")
        except OSError as exc:
            _skip(exc, _GONE)
            continue
        for tid in threads:
            try:
                with open(f"/proc/{parent}/task/{tid}/children", "rb") as listing:
                    kids = [int(word) for word in listing.read().split()]
            except OSError as exc:
                _skip(exc, _GONE)
                continue
            found.extend(kids)
            todo.extend(kids)
    return sorted(kid for kid in set(found) if start_tick(kid) is not None)


def sandbox_processes(pidns: str) -> list[tuple[int, int]]:
    """(host pid, start tick) of every live process in the pid namespace ``pidns``."""
    found = []
    want = f"pid:[{pidns}]"
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry.name}/ns/pid") != want:
                continue
        except OSError as exc:
            _skip(exc, _NOT_OURS)
            continue
        start = start_tick(int(entry.name))  # zombies wait for a reaper; they do not run
        if start is not None:
            found.append((int(entry.name), start))
    return found
