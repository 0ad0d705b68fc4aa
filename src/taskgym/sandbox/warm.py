"""Warm graders: pre-started, single-use grader sandboxes that imported their libraries already.

A grade that names modules to ``preload`` (:func:`taskgym.sandbox.grading.run_grader`) runs
its script through ``inside/warm_grader.py`` in a sandbox started ahead of time with the
grader's spec and an empty workspace. That sandbox imported the modules (CadQuery, trimesh)
before any agent data existed in it; at grade time the host copies the workspace in, sends the
"go" message carrying the grade's descriptors (nonce, report, secrets, stdout, stderr) over
the channel, waits for the script to exit and destroys the sandbox. Each pre-started sandbox
serves exactly one grade, so the fresh-sandbox guarantee holds (docs/security.md, "Warm
graders"); what it saves is the import's wall time, not its CPU. On the local backend a grade
is instead forked by the kind's grader zygote (:mod:`taskgym.sandbox.local.zygote`), which
imported once per process; the pool is its fallback and the only path on docker.

A pool per (backend, spec, command), for the :data:`MAX_KINDS` most recently used kinds, is
sized by demand: its users (:class:`Lease`: an env holds one for its grader's kind) each count
while an episode of theirs runs and will grade (:meth:`Lease.expect` at reset,
:meth:`Lease.settle` when the grade begins or the episode ends), and the pool boots in the
background until as many graders wait as are counted, at least one, at most the backend's
``warm_graders`` (its config; the CPU count by default; 0 turns warm graders off: each grade
starts its sandbox with the grader's command, as :meth:`Backend.run` does). Graders no count
asks for are stopped once their kind was idle (no grade, no reset) for the backend's
``warm_idle_sec``; when a user closes its lease the pool shrinks to the others' counts, and the
last user's close closes the pool. An entry that died, or whose code (the stub, the grader's
bound folders) changed since it started, is discarded; an empty pool means starting one on the
spot, through the same code path. What is left at exit is closed then.
"""

from __future__ import annotations

import array
import atexit
import contextlib
import hashlib
import json
import os
import queue
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path

from taskgym.errors import ConfigError, SandboxError
from taskgym.sandbox.base import Backend, ExecResult, Prestarted, ResourceUsage, SandboxSpec
from taskgym.sandbox.config import warm_graders_default
from taskgym.sandbox.output import decode_capped

__all__ = ["MAX_KINDS", "STUB_MOUNT", "Lease", "WarmPool", "close_warm_graders", "pool_size",
           "run_warm", "warm_pools"]

STUB_DIR = Path(__file__).parent / "inside"
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


class _Entry:
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
        self.entries: list[_Entry] = []
        self.lock = threading.Lock()
        self.closed = False
        self.key = _key(backend, spec, argv)
        self.used = time.monotonic()
        """When a grade or a user's reset last asked for this kind (:func:`_sweep`)."""

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

    def take(self, version: str) -> _Entry | None:
        """A pre-started entry of ``version`` (discarding older ones), or ``None``."""
        stale: list[_Entry] = []
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
                entry = _Entry(version)
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


_JOBS: queue.Queue[tuple[_Entry, Backend, SandboxSpec, list[str]]] = queue.Queue()
_BOOTER: list[threading.Thread] = []


def _boot_later(entry: _Entry, backend: Backend, spec: SandboxSpec, argv: list[str]) -> None:
    """Boot ``entry`` in the one booting thread, which lives as long as the process: a local
    sandbox dies with the thread that started it (bwrap's ``--die-with-parent`` is a parent
    death signal, sent when that thread ends). Boots run one at a time."""
    with _LOCK:
        if not _BOOTER:
            _BOOTER.append(threading.Thread(target=_booter, daemon=True, name="taskgym-warm-grader"))
            _BOOTER[0].start()
    _JOBS.put((entry, backend, spec, argv))


def _booter() -> None:
    while True:
        try:
            entry, backend, spec, argv = _JOBS.get(timeout=SWEEP_SEC)
        except queue.Empty:
            _sweep()
            continue
        if entry.discarded:
            entry.done.set()
        else:
            entry.boot(backend, spec, argv)


_POOLS: OrderedDict[tuple[int, str], WarmPool] = OrderedDict()
_LOCK = threading.Lock()


def _key(backend: Backend, spec: SandboxSpec, argv: list[str]) -> tuple[int, str]:
    return id(backend), json.dumps([spec.model_dump(mode="json"), argv])


def _pool(backend: Backend, spec: SandboxSpec, argv: list[str]) -> WarmPool:
    key = _key(backend, spec, argv)
    evicted = []
    with _LOCK:
        pool = _POOLS.get(key)
        if pool is None or pool.backend is not backend:
            pool = _POOLS[key] = WarmPool(backend, spec, argv)
        _POOLS.move_to_end(key)
        while len(_POOLS) > MAX_KINDS:
            evicted.append(_POOLS.popitem(last=False)[1])
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
    with _LOCK:
        return [p for p in _POOLS.values() if backend is None or p.backend is backend]


def close_warm_graders(backend: Backend | None = None) -> None:
    """Close the pre-started graders of ``backend`` (of every backend when ``None``)."""
    from taskgym.sandbox.local.zygote import close_zygotes

    close_zygotes(backend)
    with _LOCK:
        keys = [k for k, p in _POOLS.items() if backend is None or p.backend is backend]
        pools = [_POOLS.pop(k) for k in keys]
    for pool in pools:
        pool.close()


class Lease:
    """One user's hold on the warm graders of a kind (an env's, for its episodes' grades).

    While the lease is open the pool of its kind lives; while it expects a grade
    (:meth:`expect`) it counts one towards the graders the pool keeps waiting, or, where the
    kind's zygote serves it (local), boots that zygote instead. :meth:`close` (at the env's
    close) shrinks the pool to the other users' counts, or closes it and the kind's zygote
    when no user is left."""

    def __init__(self, backend: Backend, spec: SandboxSpec, argv: Sequence[str],
                 preload: Sequence[str]) -> None:
        self.backend = backend
        self.spec, self.command = stub_command(spec, argv, preload)
        self.key = _key(backend, self.spec, self.command)
        self.expecting = False
        with _LOCK:
            _USERS.setdefault(self.key, []).append(self)

    def same(self, backend: Backend, spec: SandboxSpec, argv: Sequence[str],
             preload: Sequence[str]) -> bool:
        """Whether this lease is for that kind of grader."""
        return self.key == _key(backend, *stub_command(spec, argv, preload))

    def expect(self) -> None:
        """An episode began that will grade: count it, and boot the kind's zygote (local),
        else graders up to the count."""
        with _LOCK:
            if self not in _USERS.get(self.key, ()):
                raise SandboxError("this warm-grader lease is closed")
            self.expecting = True
        if pool_size(self.backend):
            pool = _pool(self.backend, self.spec, self.command)
            pool.used = time.monotonic()
            from taskgym.sandbox.local.zygote import start_zygote

            if not start_zygote(self.backend, pool.spec, pool.argv, pool.version()):
                pool.refill(wanted(pool))

    def settle(self) -> None:
        """The episode's grade begins (or the episode ended): it no longer counts."""
        self.expecting = False

    def close(self) -> None:
        """Let go of the kind: its pool shrinks to what the other users count (closed when
        none is left). Idempotent."""
        with _LOCK:
            users = _USERS.get(self.key, [])
            if self in users:
                users.remove(self)
            last = not users
            if last:
                _USERS.pop(self.key, None)
            pool = _POOLS.pop(self.key, None) if last else _POOLS.get(self.key)
        self.expecting = False
        if last:
            from taskgym.sandbox.local.zygote import close_zygote

            close_zygote(self.backend, self.spec, self.command)
        if pool is not None:
            if last:
                pool.close()
            else:
                pool.trim(wanted(pool))


_USERS: dict[tuple[int, str], list[Lease]] = {}


def expected(key: tuple[int, str]) -> int:
    """Open leases of the kind ``key`` that expect a grade."""
    with _LOCK:
        return sum(1 for lease in _USERS.get(key, ()) if lease.expecting)


def wanted(pool: WarmPool) -> int:
    """Graders ``pool`` keeps waiting: one per expected grade, at least one, at most the
    backend's ``warm_graders``."""
    return min(pool_size(pool.backend), max(1, expected(pool.key)))


def _sweep() -> None:
    """Stop the waiting graders no lease expects in pools idle past their backend's
    ``warm_idle_sec``; forget such a pool once it is empty and has no users."""
    now = time.monotonic()
    for pool in warm_pools():
        if now - pool.used < pool.backend.warm_idle_sec:
            continue
        pool.trim(min(pool_size(pool.backend), expected(pool.key)))
        with _LOCK, pool.lock:
            if not pool.entries and not _USERS.get(pool.key) and _POOLS.get(pool.key) is pool:
                del _POOLS[pool.key]
                pool.closed = True  # a grade still holding it refills nothing


atexit.register(close_warm_graders)


def run_warm(backend: Backend, spec: SandboxSpec, argv: Sequence[str], preload: Sequence[str], *,
             seed: Path | None, timeout: float, fds: Mapping[str, int]
             ) -> tuple[ExecResult, ResourceUsage, str]:
    """Run ``argv`` in a grade forked by the kind's zygote (:mod:`taskgym.sandbox.local.zygote`)
    or else in a pre-started grader (one started now when none is ready): copy ``seed`` in,
    send ``spec.env`` and the descriptors ``fds`` (name -> host descriptor; the script finds
    each number in the variable of that name), collect its output, destroy it. The third
    value says which ran: ``zygote`` or ``pool``."""
    began = time.monotonic()
    deadline = began + timeout
    stub_spec, command = stub_command(spec, argv, preload)
    pool = _pool(backend, stub_spec, command)
    version = pool.version()
    from taskgym.sandbox.local.zygote import fork_grade

    started: Prestarted | None = fork_grade(backend, stub_spec, command, version, spec, deadline)
    path = "pool" if started is None else "zygote"
    entry = pool.take(version) if started is None else None
    if entry is not None:
        with contextlib.suppress(SandboxError):
            started = entry.claim(deadline)
    if started is None:  # none ready: start one on the spot, the same way
        entry = _Entry(version)
        entry.boot(backend, stub_spec, command, deadline - time.monotonic())
        started = entry.claim(deadline)
    try:
        result, usage = _go(started, spec, seed, deadline, fds, began)
    except OSError as exc:  # the workspace past the grader's disk cap, a grader gone meanwhile
        raise SandboxError(f"could not hand the grade to the pre-started grader: {exc}") from exc
    finally:
        started.close()
        if path == "pool":
            pool.refill(wanted(pool))
    return result, usage, path


def _go(started: Prestarted, spec: SandboxSpec, seed: Path | None, deadline: float,
        fds: Mapping[str, int], began: float) -> tuple[ExecResult, ResourceUsage]:
    if seed is not None:
        started.copy_in(seed)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    readers = [_Reader(out_r, spec.stream_limit_bytes), _Reader(err_r, spec.stream_limit_bytes)]
    try:
        message = json.dumps({"env": dict(spec.env), "fds": ["stdout", "stderr", *fds]}).encode()
        started.channel.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                             array.array("i", [out_w, err_w, *fds.values()]))])
    finally:
        os.close(out_w)
        os.close(err_w)
    started.channel.close()
    code, timed_out, usage = started.finish(deadline - time.monotonic())
    out, err = (reader.result() for reader in readers)
    cap = spec.output_limit_bytes
    result = ExecResult(stdout=decode_capped(out, cap), stderr=decode_capped(err, cap),
                        exit_code=124 if timed_out else code,
                        duration_sec=time.monotonic() - began, timed_out=timed_out,
                        truncated=len(out) > cap or len(err) > cap)
    return result, usage


class _Reader:
    """Reads a pipe to its end in a thread, keeping ``limit`` bytes."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.limit = limit
        self.data = bytearray()
        self.thread = threading.Thread(target=self._read, daemon=True, name="taskgym-warm-output")
        self.thread.start()

    def _read(self) -> None:
        try:
            while chunk := os.read(self.fd, 1 << 16):
                if len(self.data) < self.limit:
                    self.data += chunk[: self.limit - len(self.data)]
        finally:
            os.close(self.fd)

    def result(self) -> bytes:
        self.thread.join(timeout=10)
        return bytes(self.data)
