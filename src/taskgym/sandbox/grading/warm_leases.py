"""Warm graders' demand: the users' leases (:class:`Lease`: an env holds one for its grader's
kind) and the sizing they drive (:func:`wanted`, and :func:`sweep` for kinds idle too long) of
the pools in :mod:`taskgym.sandbox.grading.warm`.
"""

from __future__ import annotations

import queue
import time
from collections.abc import Sequence

from taskgym.errors import SandboxError
from taskgym.sandbox.base import Backend, SandboxSpec
from taskgym.sandbox.grading.warm import (
    LOCK,
    POOLS,
    WarmPool,
    get_pool,
    kind_key,
    pool_size,
    stub_command,
    warm_pools,
)

__all__ = ["USERS", "Lease", "close_dropped", "expected", "release_dropped", "sweep", "wanted"]


class Lease:
    """One user's hold on the warm graders of a kind (an env's, for its episodes' grades).

    While the lease is open the pool of its kind lives; while it expects a grade
    (:meth:`expect`) it counts one towards the graders the pool keeps waiting, or, where the
    backend's forking grader serves the kind (:meth:`Backend.grader_forks`; local: its zygote),
    boots that instead. :meth:`close` (at the env's close) shrinks the pool to the other
    users' counts, or closes it and the kind's forking grader when no user is left."""

    def __init__(self, backend: Backend, spec: SandboxSpec, argv: Sequence[str],
                 preload: Sequence[str]) -> None:
        close_dropped()
        self.backend = backend
        self.spec, self.command = stub_command(spec, argv, preload)
        self.key = kind_key(backend, self.spec, self.command)
        self.expecting = False
        with LOCK:
            USERS.setdefault(self.key, []).append(self)

    def same(self, backend: Backend, spec: SandboxSpec, argv: Sequence[str],
             preload: Sequence[str]) -> bool:
        """Whether this lease is for that kind of grader."""
        return self.key == kind_key(backend, *stub_command(spec, argv, preload))

    def expect(self) -> None:
        """An episode began that will grade: count it, and boot the kind's forking grader
        (:meth:`Backend.grader_forks`) where there is one, else graders up to the count."""
        with LOCK:
            if self not in USERS.get(self.key, ()):
                raise SandboxError("this warm-grader lease is closed")
            self.expecting = True
        if pool_size(self.backend):
            pool = get_pool(self.backend, self.spec, self.command)
            pool.used = time.monotonic()
            forks = self.backend.grader_forks()
            if forks is None or not forks.start(pool.spec, pool.argv, pool.version()):
                pool.refill(wanted(pool))

    def settle(self) -> None:
        """The episode's grade begins (or the episode ended): it no longer counts."""
        self.expecting = False

    def close(self) -> None:
        """Let go of the kind: its pool shrinks to what the other users count (closed when
        none is left). Idempotent."""
        with LOCK:
            users = USERS.get(self.key, [])
            if self in users:
                users.remove(self)
            last = not users
            if last:
                USERS.pop(self.key, None)
            pool = POOLS.pop(self.key, None) if last else POOLS.get(self.key)
        self.expecting = False
        if last:
            forks = self.backend.grader_forks()
            if forks is not None:
                forks.close(self.spec, self.command)
        if pool is not None:
            if last:
                pool.close()
            else:
                pool.trim(wanted(pool))


USERS: dict[tuple[int, str], list[Lease]] = {}
"""The open leases by kind (:func:`~taskgym.sandbox.grading.warm.kind_key`); guarded by
:data:`~taskgym.sandbox.grading.warm.LOCK`."""


def expected(key: tuple[int, str]) -> int:
    """Open leases of the kind ``key`` that expect a grade."""
    with LOCK:
        return sum(1 for lease in USERS.get(key, ()) if lease.expecting)


def wanted(pool: WarmPool) -> int:
    """Graders ``pool`` keeps waiting: one per expected grade, at least one, at most the
    backend's ``warm_graders``."""
    return min(pool_size(pool.backend), max(1, expected(pool.key)))


_DROPPED: queue.SimpleQueue[Lease] = queue.SimpleQueue()
"""Leases of envs dropped unclosed, waiting for :func:`close_dropped`."""


def release_dropped(lease: Lease) -> None:
    """What an env's finalizer calls for its lease: queue it to be closed at a safe point.
    A finalizer runs wherever the garbage collector does, in any thread, possibly inside a
    block that holds :data:`~taskgym.sandbox.grading.warm.LOCK` or the zygotes' lock, which closing
    the lease takes (it deadlocked the zygotes' sweep and every thread after it); so it only
    queues (``SimpleQueue.put`` may be called from a finalizer)."""
    _DROPPED.put(lease)


def close_dropped() -> None:
    """Close the leases :func:`release_dropped` queued: called where no lock is held (a new
    lease, the idle sweeps of the warm pools and of the zygotes, every second while either
    runs)."""
    while True:
        try:
            lease = _DROPPED.get_nowait()
        except queue.Empty:
            return
        lease.close()


def sweep() -> None:
    """Stop the waiting graders no lease expects in pools idle past their backend's
    ``warm_idle_sec``; forget such a pool once it is empty and has no users."""
    close_dropped()
    now = time.monotonic()
    for pool in warm_pools():
        if now - pool.used < pool.backend.warm_idle_sec:
            continue
        pool.trim(min(pool_size(pool.backend), expected(pool.key)))
        with LOCK, pool.lock:
            if not pool.entries and not USERS.get(pool.key) and POOLS.get(pool.key) is pool:
                del POOLS[pool.key]
                pool.closed = True  # a grade still holding it refills nothing
