"""The two drivers of a shell session's command protocol (the generator
:meth:`~taskgym.sandbox.shell.session.ShellSession._protocol` makes for each command, for the
local and the docker session alike).

The protocol yields a float ``s``: "wait until the status socket is readable or ``s`` seconds
pass", answered with whether it became readable; or a callable that blocks (killing what a
command started, reaping a dead shell, a restart), answered with its result. It returns the
command's :class:`~taskgym.sandbox.base.ExecResult`.

- :func:`drive_blocking` answers the waits with the session's ``poll`` object, in the calling
  thread (``exec``).
- :class:`LoopDriver` answers them from an asyncio event loop (``aexec``), any loop
  (uvloop's too). The status socket stays registered with the loop between commands, so a
  command costs no registration: the loop calls the driver when the socket turns readable,
  and the driver feeds the generator right there, in the loop's callback, up to the
  command's result; the coroutine awaiting it wakes once. The waits' ends share one timer
  per loop. The registration is made through
  a duplicate descriptor the driver owns: the session may close its socket from any thread
  (a restart in the pool, ``close`` from another thread) while a loop still holds the
  registration, and the loop never watches a descriptor number reused by something else.
  Nothing is ever removed from a loop by another thread: that is handed to the loop
  (``call_soon_threadsafe``). The blocking callables run in the bounded pool.

:meth:`~taskgym.sandbox.shell.session.ShellSession.exec_plan` hands the same waits, as waits on
the status socket's descriptor, to :func:`taskgym.sandbox.shell.plans.drive_plans` (many sessions
waited on in one ``poll``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import select
import time
from collections.abc import Callable, Generator
from concurrent.futures import Future
from typing import Any

from taskgym.sandbox.base import ExecResult
from taskgym.sandbox.host.blocking import submit_blocking

__all__ = ["LoopDriver", "Steps", "drive_blocking"]

Steps = Generator["float | Callable[[], Any]", Any, ExecResult]
"""A command's protocol as a generator (see the module's docstring)."""


def drive_blocking(steps: Steps, poll: select.poll) -> ExecResult:
    """Run ``steps`` to its result, waiting on ``poll`` (which watches the status socket)."""
    wait = poll.poll
    answer: object = None
    try:
        while True:
            request = steps.send(answer)
            answer = bool(wait(request * 1000.0)) if isinstance(request, float) else request()
    except StopIteration as stop:
        result: ExecResult = stop.value
        return result


class LoopDriver:
    """Drives a session's commands from the running event loop (see the module's docstring).

    One per session; the session runs one command at a time, so at most one :meth:`run` is
    in progress. :attr:`job` is the pool job a command is waiting for, if any (the session
    stays locked until it ends, even when the command is cancelled).
    """

    def __init__(self) -> None:
        self._fd = -1
        self._watch: _Watch | None = None
        self._steps: Steps | None = None
        self._done: asyncio.Future[Any] | None = None
        self._deadlines: _Deadlines | None = None  # those of the loop a command waits on
        self.job: Future[Any] | None = None

    def attach(self, fd: int) -> None:
        """Watch the status socket ``fd`` from now on (a new shell's)."""
        self.detach()
        self._fd = fd

    def detach(self) -> None:
        """Stop watching the status socket, before it is closed; from any thread."""
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.drop_soon()
        if _HANDED_OVER:
            _drop_orphans()

    async def in_pool(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` in the bounded pool, as :attr:`job`."""
        self.job = submit_blocking(fn)
        return await asyncio.wrap_future(self.job)

    async def run(self, steps: Steps) -> ExecResult:
        """Run ``steps`` to its result. Cancelled (or failing), it closes ``steps``."""
        loop = asyncio.get_running_loop()
        answer: Any = None
        try:
            while True:
                done = self._done = loop.create_future()
                self._steps = steps
                self._advance(answer)
                request = await done  # the result, or a blocking call
                if isinstance(request, ExecResult):
                    return request
                answer = await self.in_pool(request)
        except BaseException:
            steps.close()
            raise
        finally:
            self._steps = self._done = None
            self._stop_timer()

    # -- the loop's callbacks ---------------------------------------------------------------
    def _advance(self, answer: Any) -> None:
        """Feed ``answer`` to the command; settle :attr:`_done` unless it waits again."""
        steps, done = self._steps, self._done
        assert steps is not None and done is not None
        try:
            request = steps.send(answer)
            if isinstance(request, float):
                self._wait(done.get_loop(), request)
                return
        except StopIteration as stop:
            request = stop.value
        except Exception as exc:
            self._steps = None
            done.set_exception(exc)
            return
        self._steps = None  # paused: the coroutine takes it from here
        done.set_result(request)

    def _wait(self, loop: asyncio.AbstractEventLoop, seconds: float) -> None:
        watch = self._watch
        if watch is None or watch.loop is not loop:
            if watch is not None:
                watch.drop_soon()
            self._watch = _Watch(self, loop, self._fd)
        deadlines = self._deadlines
        if deadlines is None or deadlines.loop is not loop:
            deadlines = self._deadlines = _Deadlines.of(loop)
        deadlines.add(self, time.monotonic() + seconds)

    def waiting(self) -> bool:
        """Whether a command waits for the status socket (its awaiting coroutine not cancelled)."""
        return self._steps is not None and self._done is not None and not self._done.done()

    def status_ready(self) -> None:
        self._stop_timer()
        self._advance(True)

    def timed_out(self) -> None:
        """The wait ran out (its :class:`_Deadlines` has dropped it)."""
        if self.waiting():
            self._advance(False)

    def _stop_timer(self) -> None:
        if self._deadlines is not None:
            self._deadlines.ends.pop(self, None)


class _Deadlines:
    """One timer per event loop for every command waiting on it: a wait is an entry (its
    driver and when it ends), not a timer of its own (a ``call_later`` and its ``cancel`` per
    command cost asyncio's loop several µs, and the cancelled timers stay in its heap until
    their time). The timer is set for the earliest end."""

    _loops: dict[asyncio.AbstractEventLoop, _Deadlines] = {}

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.ends: dict[LoopDriver, float] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._at = math.inf

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> _Deadlines:
        """``loop``'s (closed loops' are forgotten here)."""
        found = cls._loops.get(loop)
        if found is None:
            for old in list(cls._loops):  # a copy made holding the GIL: other threads may add
                if old.is_closed():
                    cls._loops.pop(old, None)
            found = cls._loops[loop] = cls(loop)
        return found

    def add(self, driver: LoopDriver, end: float) -> None:
        """Call ``driver.timed_out()`` at ``end`` (monotonic) unless it is dropped first."""
        self.ends[driver] = end
        if end < self._at:
            self._arm(end)

    def _arm(self, end: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._at = end
        self._timer = self.loop.call_later(max(0.0, end - time.monotonic()), self._sweep)

    def _sweep(self) -> None:
        self._timer, self._at = None, math.inf
        now = time.monotonic()
        due = [driver for driver, end in self.ends.items() if end <= now]
        for driver in due:
            del self.ends[driver]
        for driver in due:
            driver.timed_out()  # which may wait again, adding itself back
        if self.ends:
            earliest = min(self.ends.values())
            if earliest < self._at:
                self._arm(earliest)


class _Watch:
    """The status socket registered with one event loop through a descriptor of its own."""

    def __init__(self, driver: LoopDriver, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self.driver = driver
        self.loop = loop
        self.fd = os.dup(fd)
        try:
            loop.add_reader(self.fd, self.ready)
        except BaseException:
            os.close(self.fd)
            raise

    def ready(self) -> None:
        """The loop's reader callback: feed the waiting command, or stop watching when none
        waits (a sync ``exec`` reads this answer, or its command was cancelled)."""
        driver = self.driver
        if driver._watch is self:
            if driver.waiting():
                driver.status_ready()
                return
            driver._watch = None
        self.drop()

    def drop(self) -> None:
        """Unregister and close; on the loop's thread, or with the loop not running."""
        if self.fd >= 0:
            with contextlib.suppress(Exception):  # a closed loop has nothing to remove
                self.loop.remove_reader(self.fd)
            os.close(self.fd)
            self.fd = -1
        _HANDED_OVER.discard(self)

    def drop_soon(self) -> None:
        """:meth:`drop` from any thread: handed to the loop when it runs in another one."""
        loop = self.loop
        if loop.is_running() and not loop.is_closed() and not _in_loop(loop):
            try:
                loop.call_soon_threadsafe(self.drop)
                _HANDED_OVER.add(self)
                return
            except RuntimeError:  # closed meanwhile
                pass
        self.drop()


_HANDED_OVER: set[_Watch] = set()
"""Watches handed to their loop's thread to drop: a loop closed before it ran the drop leaves
its watch here, dropped by the next :meth:`LoopDriver.detach` of any session."""


def _drop_orphans() -> None:
    for watch in list(_HANDED_OVER):  # a copy made holding the GIL: other threads may add
        if watch.loop.is_closed():
            watch.drop()


def _in_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether this thread is running ``loop``."""
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False
