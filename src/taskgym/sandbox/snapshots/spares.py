"""Spare sandboxes for forks: sessions started ahead of time that a fork fills.

A fork's floor is starting a sandbox (a bubblewrap tree, its cgroup, its shell: about 15 ms
locally). :class:`Spares` keeps sessions of one spec started and **never used** (no command
ran in them, no agent data reached them: only the shell's own start-up), so that
:meth:`Backend.fork <taskgym.sandbox.Backend.fork>` takes one, copies the snapshot's
workspace in and sources its shell state, exactly what it does to a session it has just
started. Each spare serves one child and is never given back: a child is as independent as
one started on the spot (its own sandbox, cgroup, limits and grading).

After a fork of ``n`` children the spares are refilled in the background to ``n`` (at most
``TASKGYM_FORK_SPARES``, default 16; 0 turns spares off), one at a time, in one thread that
lives as long as the process (a local sandbox dies with the thread that started it:
bubblewrap's ``--die-with-parent`` is a parent-death signal, sent when that thread ends). A
spare that died meanwhile is closed and skipped; a fork with none ready starts its sandbox on
the spot. A change of spec (another task's limits) closes the spares of the old one.
:meth:`TaskEnv.fork <taskgym.TaskEnv.fork>` keeps one :class:`Spares` per env, closed with
the env; what is left at exit is closed then.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import time
import weakref

from taskgym.sandbox.base import Backend, SandboxSpec, Session
from taskgym.sandbox.config import whole_number_env
from taskgym.sandbox.host.at_fork import at_fork
from taskgym.sandbox.host.booting import JobThread

__all__ = ["Spares", "max_spares"]

DEFAULT_MAX = 16


def max_spares() -> int:
    """The most spares one :class:`Spares` keeps: ``TASKGYM_FORK_SPARES`` (default 16; 0: off)."""
    return whole_number_env("TASKGYM_FORK_SPARES", DEFAULT_MAX, hint=" (0 turns spares off)")


class Spares:
    """Started, unused sessions of one spec on ``backend``, for forks (see the module)."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._spec: SandboxSpec | None = None
        self._ready: list[Session] = []
        self._wanted = 0
        self._booting = 0
        self._starting = False
        self._closed = False
        self._cond = threading.Condition()
        self.taken = 0
        """Forks served by a spare (the rest started their sandbox on the spot)."""
        _ALL.add(self)

    def take(self, spec: SandboxSpec) -> Session | None:
        """A live spare of ``spec``, or ``None`` (the caller starts one)."""
        stale: list[Session] = []
        found: Session | None = None
        with self._cond:
            if spec != self._spec:
                stale, self._ready, self._spec = self._ready, [], spec
            while self._ready and found is None:
                session = self._ready.pop(0)
                if session.alive:
                    found = session
                else:
                    stale.append(session)
            if found is not None:
                self.taken += 1
        _close(stale)
        return found

    def want(self, spec: SandboxSpec, n: int) -> None:
        """Keep ``n`` spares of ``spec`` (at most :func:`max_spares`), started in the
        background from now on."""
        stale: list[Session] = []
        with self._cond:
            if self._closed:
                return
            if spec != self._spec:
                stale, self._ready, self._spec = self._ready, [], spec
            self._wanted = min(n, max_spares())
            missing = self._wanted - len(self._ready) - self._booting
            self._booting += max(0, missing)
        _close(stale)
        for _ in range(missing):
            _boot_later(self)

    def ready(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds until no spare is still starting (for benchmarks
        and tests); whether that happened."""
        deadline = time.monotonic() + timeout
        with self._cond:
            return self._cond.wait_for(lambda: self._booting == 0 or self._closed,
                                       max(0.0, deadline - time.monotonic()))

    def live(self) -> int:
        """Spares held (started, unused)."""
        with self._cond:
            return len(self._ready)

    def close(self) -> None:
        """Close every spare, waiting (up to 30 s) for one being started to be up and closed,
        so that nothing of them is left when this returns. Idempotent."""
        with self._cond:
            self._closed = True
            stale, self._ready = self._ready, []
            self._cond.notify_all()
        _close(stale)
        with self._cond:
            self._cond.wait_for(lambda: not self._starting, 30.0)

    def _boot_one(self) -> None:
        """Start one spare (in the booting thread), unless no longer wanted."""
        with self._cond:
            spec = self._spec
            skip = self._closed or spec is None or len(self._ready) >= self._wanted
            self._starting = not skip
        session: Session | None = None
        if not skip and spec is not None:
            with contextlib.suppress(Exception):  # a fork starts its own then, and says why
                session = self.backend.start(spec)
        with self._cond:
            self._booting -= 1
            keep = (session is not None and not self._closed and spec == self._spec
                    and len(self._ready) < self._wanted)
            if keep and session is not None:
                self._ready.append(session)
            self._cond.notify_all()
        if not keep and session is not None:
            _close([session])
        with self._cond:
            self._starting = False
            self._cond.notify_all()


def _close(sessions: list[Session]) -> None:
    for session in sessions:
        with contextlib.suppress(Exception):
            session.close()


_BOOTS: JobThread[Spares] = JobThread("taskgym-fork-spares", lambda spares: spares._boot_one())
"""The one thread that starts spare sessions (see :mod:`taskgym.sandbox.host.booting`)."""
_ALL: weakref.WeakSet[Spares] = weakref.WeakSet()


def _forget_parent_in_child() -> None:
    """In a forked child: the parent's spares are not handed to the child's forks (two
    processes would drive one sandbox; nor can the child close them: sessions close only in
    the process that made them); each :class:`Spares` starts empty, with a lock no parent
    thread held at the fork."""
    for spares in list(_ALL):
        spares._cond = threading.Condition()
        spares._ready, spares._booting, spares._starting = [], 0, False


at_fork(after_in_child=_forget_parent_in_child)


def _boot_later(spares: Spares) -> None:
    _BOOTS.put(spares)


@atexit.register
def _close_all() -> None:
    for spares in list(_ALL):
        spares.close()
