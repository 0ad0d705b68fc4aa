"""A thread that runs background jobs one at a time, in the order they were queued.

Warm graders, grader zygotes and fork spares each boot sandboxes off the caller's path, in a
thread that lives as long as the process: a local sandbox dies with the thread that started it
(bwrap's ``--die-with-parent`` is a parent death signal, sent when that thread ends). The
thread starts with the first job. Between jobs it calls its ``idle`` function every ``every``
seconds (the idle sweeps). In a process forked from one that used it, it starts afresh: no
thread runs there and the parent's queued jobs are not inherited. (The docker backend
removes closed containers on one too.)
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from taskgym.sandbox.host.at_fork import at_fork

__all__ = ["JobThread"]

Job = TypeVar("Job")


class JobThread(Generic[Job]):
    """Runs ``run(job)`` for each :meth:`put` job in one thread named ``name``; ``idle()``
    every ``every`` seconds while no job waits (never, when ``idle`` is ``None``).

    Create it before registering at-fork hooks of locks held while calling :meth:`put`, so
    that a fork takes those locks before this one, in the order :meth:`put` takes them."""

    def __init__(self, name: str, run: Callable[[Job], None],
                 idle: Callable[[], None] | None = None, every: float = 1.0) -> None:
        self._name, self._run, self._idle, self._every = name, run, idle, every
        self._lock = threading.Lock()
        self._jobs: queue.Queue[Job] = queue.Queue()
        self._thread: threading.Thread | None = None
        at_fork(before=self._lock.acquire, after_in_parent=self._lock.release,
                after_in_child=self._forget)

    def put(self, job: Job) -> None:
        """Queue ``job``, starting the thread if it does not run yet."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, daemon=True, name=self._name)
                self._thread.start()
            self._jobs.put(job)

    def _forget(self) -> None:
        self._jobs = queue.Queue()
        self._thread = None
        self._lock.release()

    def _loop(self) -> None:
        while True:
            try:
                job = self._jobs.get(timeout=self._every if self._idle is not None else None)
            except queue.Empty:
                assert self._idle is not None
                self._idle()
                continue
            try:
                self._run(job)
            finally:
                self._jobs.task_done()

    def pending(self) -> int:
        """Jobs queued or running."""
        return self._jobs.unfinished_tasks
