"""Warm graders: pre-started, single-use grader sandboxes that imported their libraries already.

A grade that names modules to ``preload`` (:func:`taskgym.sandbox.grading.run.run_grader`) runs
its script through ``inside/warm_grader.py`` in a sandbox started ahead of time with the
grader's spec and an empty workspace. That sandbox imported the modules (CadQuery, trimesh)
before any agent data existed in it; at grade time the host copies the workspace in, sends the
"go" message carrying the grade's descriptors (nonce, report, secrets, stdout, stderr) over
the channel, waits for the script to exit and destroys the sandbox. Each pre-started sandbox
serves exactly one grade, so the fresh-sandbox guarantee holds (docs/security.md, "Warm
graders"); what it saves is the import's wall time, not its CPU. Where the backend has
forking graders (:meth:`Backend.grader_forks`, :mod:`taskgym.sandbox.grading.forks`; on the
local backend the kind's grader zygote, which imported once per process) a grade is forked by
one instead; the pool is their fallback, and the only path on docker.

A pool per (backend, spec, command), for the :data:`MAX_KINDS` most recently used kinds, is
sized by demand: its users (:class:`~taskgym.sandbox.grading.warm_leases.Lease`: an env holds one for
its grader's kind) each count while an episode of theirs runs and will grade (``Lease.expect``
at reset, ``Lease.settle`` when the grade begins or the episode ends), and the pool boots in the
background until as many graders wait as are counted, at least one, at most the backend's
``warm_graders`` (its config; the CPU count by default; 0 turns warm graders off: each grade
starts its sandbox with the grader's command, as :meth:`Backend.run` does). Graders no count
asks for are stopped once their kind was idle (no grade, no reset) for the backend's
``warm_idle_sec``; when a user closes its lease the pool shrinks to the others' counts, and the
last user's close closes the pool. An entry that died, or whose code (the stub, the grader's
bound folders) changed since it started, is discarded; an empty pool means starting one on the
spot, through the same code path. What is left at exit is closed then.

A process forked from one with warm graders (``os.fork``, multiprocessing's ``fork``) starts
with no pool and no booting thread (:func:`_forget_in_child`): the parent's pre-started
graders stay the parent's, neither used nor closed by the child, which starts its own on
demand; the leases it inherited (its envs') still count.

This module holds the pools and their booting thread; the demand (leases and the sizing
they drive) is :mod:`taskgym.sandbox.grading.warm_leases`, running one grade in a taken grader
:mod:`taskgym.sandbox.grading.warm_run`.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import socket
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from taskgym.errors import ConfigError, SandboxError
from taskgym.sandbox.base import Backend, Prestarted, SandboxSpec
from taskgym.sandbox.config import warm_graders_default
from taskgym.sandbox.host.at_fork import at_fork
from taskgym.sandbox.host.booting import JobThread

__all__ = ["LOCK", "MAX_KINDS", "POOLS", "STUB_MOUNT", "Entry", "WarmPool", "close_warm_graders",
           "get_pool", "kind_key", "pool_size", "stub_command", "warm_pools"]

STUB_DIR = Path(__file__).parent.parent / "inside"
STUB_MOUNT = "/.taskgym-warm"
MAX_KINDS = 4
"""Kinds of grader (backend, spec, command) kept warm at once; the least recently used goes."""
BOOT_SEC = 300.0
"""Longest a pre-started grader may take to import its modules."""
SWEEP_SEC = 1.0
"""How often the booting thread, when it has nothing to boot, stops graders idle too long."""


def pool_size(backend: Backend | None = None) -> int:
    """Most warm graders kept per kind on ``backend`` (its config's ``warm_graders``; without
    a backend or a setting, the configs' default: ``TASKGYM_WARM_GRADERS``, else the CPU
    count); 0: warm graders off."""
    if backend is not None and backend.warm_graders is not None:
        return backend.warm_graders
    return warm_graders_default()


class Entry:
    """One pre-started grader, booting (in a thread, or inline) until :attr:`done`."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.done = threading.Event()
        self.started: Prestarted | None = None
        self.booting: Prestarted | None = None
        self.error = ""
        self.lock = threading.Lock()
        self.discarded = False

    def boot(self, backend: Backend, spec: SandboxSpec, argv: list[str],
             timeout: float = BOOT_SEC) -> None:
        try:
            started = backend.prestart(spec, argv)
        except Exception as exc:
            self.error = f"could not pre-start the grader: {exc}"
            self.done.set()
            return
        with self.lock:
            self.booting = None if self.discarded else started
        reply = b"error discarded"
        if self.booting is not None:
            try:
                started.channel.settimeout(max(0.1, timeout))
                reply = started.channel.recv(1 << 16)
                started.channel.settimeout(None)
            except OSError as exc:
                reply = f"error no answer ({exc})".encode()
        with self.lock:
            self.booting = None
            keep = reply == b"ready" and not self.discarded
            if keep:
                self.started = started
        if not keep:
            started.close()
            self.error = ("the pre-started grader failed to import its modules: "
                          + reply.removeprefix(b"error ").decode(errors="replace")[-2000:])
        self.done.set()

    def claim(self, deadline: float) -> Prestarted:
        """The booted sandbox, once ready (waiting until ``deadline``); raises why not."""
        if not self.done.wait(max(0.0, deadline - time.monotonic())):
            self.discard()
            raise SandboxError("the pre-started grader was not ready in time")
        with self.lock:
            started, self.started = self.started, None
            self.discarded = True
        if started is None:
            raise SandboxError(self.error or "the pre-started grader was discarded")
        if not started.alive:
            started.close()
            raise SandboxError("the pre-started grader died while waiting")
        return started

    def discard(self) -> None:
        with self.lock:
            self.discarded = True
            started, self.started = self.started, None
            if self.booting is not None:  # wakes boot(), which closes it
                with contextlib.suppress(OSError):
                    self.booting.channel.shutdown(socket.SHUT_RDWR)
        if started is not None:
            started.close()


class WarmPool:
    """Pre-started graders of one kind: ``argv`` in sandboxes of ``spec`` on ``backend``."""

    def __init__(self, backend: Backend, spec: SandboxSpec, argv: list[str]) -> None:
        self.backend = backend
        self.spec = spec
        self.argv = argv
        self.entries: list[Entry] = []
        self.lock = threading.Lock()
        self.closed = False
        self.key = kind_key(backend, spec, argv)
        self.used = time.monotonic()
        """When a grade or a user's reset last asked for this kind
        (:func:`~taskgym.sandbox.grading.warm_leases.sweep`)."""

    def version(self) -> str:
        """A digest of the code the grader runs: the stub and every bound folder's files
        (names, sizes, modification times), and the command."""
        digest = hashlib.sha256(json.dumps(self.argv).encode())
        for folder in sorted(self.spec.ro_binds):
            for path in sorted(Path(folder).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    stat = path.stat()
                    digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
        return digest.hexdigest()

    def take(self, version: str) -> Entry | None:
        """A pre-started entry of ``version`` (discarding older ones), or ``None``."""
        stale: list[Entry] = []
        found = None
        self.used = time.monotonic()
        with self.lock:
            while self.entries and found is None:
                entry = self.entries.pop(0)
                if entry.version == version:
                    found = entry
                else:
                    stale.append(entry)
        for entry in stale:
            entry.discard()
        return found

    def refill(self, size: int) -> None:
        """Start booting entries in the background until ``size`` are pre-started."""
        version = self.version()
        while True:
            with self.lock:
                if self.closed or len(self.entries) >= size:
                    return
                entry = Entry(version)
                self.entries.append(entry)
            _boot_later(entry, self.backend, self.spec, self.argv)

    def ready(self, timeout: float) -> bool:
        """Wait until every entry finished booting (for benchmarks and tests)."""
        with self.lock:
            entries = list(self.entries)
        deadline = time.monotonic() + timeout
        return all(e.done.wait(max(0.0, deadline - time.monotonic())) for e in entries)

    def live(self) -> int:
        """Pre-started sandboxes held (booted and not yet used)."""
        with self.lock:
            return sum(1 for e in self.entries if e.started is not None)

    def trim(self, size: int) -> None:
        """Stop all but the first (oldest) ``size`` entries."""
        with self.lock:
            extra, self.entries = self.entries[size:], self.entries[:size]
        for entry in extra:
            entry.discard()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            entries, self.entries = self.entries, []
        for entry in entries:
            entry.discard()
        for entry in entries:  # one still booting closes its sandbox when it is done
            entry.done.wait(30)


def _boot(job: tuple[Entry, Backend, SandboxSpec, list[str]]) -> None:
    entry, backend, spec, argv = job
    if entry.discarded:
        entry.done.set()
    else:
        entry.boot(backend, spec, argv)


def _sweep() -> None:
    from taskgym.sandbox.grading.warm_leases import sweep

    sweep()


_BOOTS: JobThread[tuple[Entry, Backend, SandboxSpec, list[str]]] = JobThread(
    "taskgym-warm-grader", _boot, idle=_sweep, every=SWEEP_SEC)
"""The one thread that boots pool graders, one at a time (see :mod:`taskgym.sandbox.host.booting`),
and sweeps idle pools between boots."""


def _boot_later(entry: Entry, backend: Backend, spec: SandboxSpec, argv: list[str]) -> None:
    """Boot ``entry`` in the booting thread."""
    _BOOTS.put((entry, backend, spec, argv))


POOLS: OrderedDict[tuple[int, str], WarmPool] = OrderedDict()
"""The live pools by kind (:func:`kind_key`), least recently used first; guarded by :data:`LOCK`."""
FORKING: weakref.WeakSet[Backend] = weakref.WeakSet()
"""The backends warm graders were asked of, whose :meth:`~Backend.grader_forks` a
:func:`close_warm_graders` of every backend closes; guarded by :data:`LOCK`."""
LOCK = threading.Lock()
"""Guards :data:`POOLS`, :data:`FORKING`, the booting thread's start and the leases' users
(:data:`~taskgym.sandbox.grading.warm_leases.USERS`)."""


def kind_key(backend: Backend, spec: SandboxSpec, argv: list[str]) -> tuple[int, str]:
    """The kind of a grader: its backend, its (stub) spec and command."""
    return id(backend), json.dumps([spec.model_dump(mode="json"), argv])


def get_pool(backend: Backend, spec: SandboxSpec, argv: list[str]) -> WarmPool:
    """The pool of this kind (a new one when there is none), now the most recently used; the
    least recently used past :data:`MAX_KINDS` are closed."""
    key = kind_key(backend, spec, argv)
    evicted = []
    with LOCK:
        FORKING.add(backend)
        pool = POOLS.get(key)
        if pool is None or pool.backend is not backend:
            pool = POOLS[key] = WarmPool(backend, spec, argv)
        POOLS.move_to_end(key)
        while len(POOLS) > MAX_KINDS:
            evicted.append(POOLS.popitem(last=False)[1])
    for old in evicted:
        old.close()
    return pool


def stub_command(spec: SandboxSpec, argv: Sequence[str], preload: Sequence[str]
                 ) -> tuple[SandboxSpec, list[str]]:
    """The grader's spec (without its environment, which the go message carries, and with the
    stub's folder bound) and the stub's command for ``argv`` (``python3 [options] SCRIPT
    [ARGS]``)."""
    count = next((i for i, a in enumerate(argv[1:]) if not a.startswith("-")), len(argv) - 1)
    options, rest = list(argv[1:1 + count]), list(argv[1 + count:])
    if not rest or {"-c", "-m"} & set(options):
        raise ConfigError(f"a warm grader runs a script (python3 [options] SCRIPT ...), not {argv!r}")
    spec = spec.model_copy(update={"env": {}, "ro_binds": {**spec.ro_binds, str(STUB_DIR): STUB_MOUNT}})
    return spec, [argv[0], *options, f"{STUB_MOUNT}/warm_grader.py", ",".join(preload), *rest]


def warm_pools(backend: Backend | None = None) -> list[WarmPool]:
    """The live pools (of ``backend``, or all)."""
    with LOCK:
        return [p for p in POOLS.values() if backend is None or p.backend is backend]


def close_warm_graders(backend: Backend | None = None) -> None:
    """Close the pre-started graders of ``backend`` (of every backend when ``None``)."""
    with LOCK:
        owners = [backend] if backend is not None else list(FORKING)
    for owner in owners:
        forks = owner.grader_forks()
        if forks is not None:
            forks.close_all()
    with LOCK:
        keys = [k for k, p in POOLS.items() if backend is None or p.backend is backend]
        pools = [POOLS.pop(k) for k in keys]
    for pool in pools:
        pool.close()



def _forget_in_child() -> None:
    """In a forked child: drop the parent's pools (their sandboxes are the parent's: neither
    used nor closed here; the booting thread starts afresh by itself), then free
    :data:`LOCK`, held across the fork so that no other thread left these half-changed."""
    POOLS.clear()
    LOCK.release()


at_fork(before=LOCK.acquire, after_in_parent=LOCK.release, after_in_child=_forget_in_child)
atexit.register(close_warm_graders)
