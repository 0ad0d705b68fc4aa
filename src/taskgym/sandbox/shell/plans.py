"""Plans: work that waits, written as a generator, and the driver that runs many at once.

A plan yields what it waits for and is sent the answer:

- a :data:`Wait` ``(fd, seconds)``: "until descriptor ``fd`` is readable, or ``seconds``
  pass", answered with ``True`` (readable) or ``False`` (the time ran out);
- a callable that blocks (grading, a tool with no plan, killing what a command started,
  restarting a shell), answered with its result, or with the exception it raised thrown in.

It returns its result. Anything else it yields (a malformed request) is thrown back into it
as a ``TypeError``, and a wait on a descriptor that is not open as an ``OSError`` (``EBADF``):
the plan's own error, which it may handle, never the driver's.

:meth:`Session.exec_plan <taskgym.sandbox.base.Session.exec_plan>`
is a command as a plan (the local session's waits on its shell's status socket; another
backend's one blocking ``exec``), and a taskgym env's step is one too
(``TaskEnv.poll_step``).

:func:`drive_plans` runs plans together in the calling thread: every wait of every plan in
one ``poll`` call, the blocking callables in the bounded pool
(:mod:`taskgym.sandbox.host.blocking`), whose ends wake the poll through a pipe. No event loop, no
future per wait, no thread hand-over per wait: what a vector env of local sandboxes needs
(its sub-steps answer within the same few hundred microseconds).
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import select
import threading
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_jobs
from typing import Any, TypeVar

from taskgym.sandbox.host.blocking import submit_blocking

__all__ = ["Plan", "Wait", "answer_each", "answer_each_async", "drive_plans"]

T = TypeVar("T")
R = TypeVar("R")
Wait = tuple[int, float]
"""``(fd, seconds)``: wait until ``fd`` is readable or ``seconds`` pass."""
Plan = Generator["Wait | Callable[[], Any]", Any, T]
"""Work that waits, as a generator (see the module's docstring)."""


def drive_plans(plans: Sequence[Plan[T]]) -> list[T | Exception]:
    """Run every plan to its end, together; each one's result, or the exception it raised.

    Interrupted (a ``KeyboardInterrupt`` in the poll, or one a plan raised), it waits for
    the blocking calls already running, closes every plan not yet ended (each cleans up as
    for a cancelled command), and raises.
    """
    return _Driver(plans).run()


def answer_each(requests: Generator[R, Any, T], answer: Callable[[R], Any]) -> T:
    """Run the generator ``requests`` to its end in the calling thread: each request it
    yields is sent ``answer(request)``, or has the exception that raised thrown in (the
    generator decides what an error means). A taskgym step and a Ray pool's calls are such
    generators; :func:`answer_each_async` is the asyncio driver of the same ones."""
    try:
        request = requests.send(None)
        while True:
            try:
                reply = answer(request)
            except Exception as exc:
                request = requests.throw(exc)
            else:
                request = requests.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def answer_each_async(requests: Generator[R, Any, T],
                            answer: Callable[[R], Awaitable[Any]]) -> T:
    """:func:`answer_each` with ``answer`` awaited."""
    try:
        request = requests.send(None)
        while True:
            try:
                reply = await answer(request)
            except Exception as exc:
                request = requests.throw(exc)
            else:
                request = requests.send(reply)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


class _Driver:
    def __init__(self, plans: Sequence[Plan[T]]) -> None:
        self.plans = plans
        self.outcomes: list[Any] = [None] * len(plans)
        self.poll = select.poll()
        self.fds: dict[int, list[int]] = {}  # a descriptor waited on -> the plans waiting
        self.waits: dict[int, Wait] = {}  # a waiting plan -> its descriptor, when it runs out
        self.jobs: dict[Future[Any], int] = {}  # a blocking call running -> its plan
        self.wake_r = self.wake_w = -1  # written when a job ends (made at the first job)
        self.wake_lock = threading.Lock()  # a job's end never writes to a closed (reused) fd

    def run(self) -> list[Any]:
        try:
            for i in range(len(self.plans)):
                self.advance(i, None)
            while self.fds or self.jobs:
                self.wait_once()
        except BaseException:
            self.abandon()
            raise
        finally:
            with self.wake_lock:
                if self.wake_r >= 0:
                    os.close(self.wake_r)
                    os.close(self.wake_w)
                    self.wake_r = self.wake_w = -1
        return self.outcomes

    def wait_once(self) -> None:
        timeout_ms = None
        end = min((end for _fd, end in self.waits.values()), default=math.inf)
        if end < math.inf:  # else no wait runs out: poll until a descriptor answers
            timeout_ms = max(0.0, (end - time.monotonic()) * 1000.0)
        for fd, event in self.poll.poll(timeout_ms):
            if fd == self.wake_r:
                self.jobs_ended()
            elif fd in self.fds:
                waiting = self.fds.pop(fd)
                self.poll.unregister(fd)
                for i in waiting:
                    del self.waits[i]
                if event & select.POLLNVAL:
                    closed = OSError(errno.EBADF, f"descriptor {fd} waited on is not open")
                    for i in waiting:
                        self.advance(i, None, closed)
                else:
                    for i in waiting:
                        self.advance(i, True)
        if self.waits:
            now = time.monotonic()
            for i in [i for i, (_fd, end) in self.waits.items() if end <= now]:
                self.stop_waiting(i)
                self.advance(i, False)

    def jobs_ended(self) -> None:
        with contextlib.suppress(BlockingIOError):
            os.read(self.wake_r, 4096)
        for job in [job for job in self.jobs if job.done()]:
            i = self.jobs.pop(job)
            error = job.exception()
            if error is None:
                self.advance(i, job.result())
            else:
                self.advance(i, None, error)

    def advance(self, i: int, answer: Any, error: BaseException | None = None) -> None:
        """Send plan ``i`` its answer (or throw ``error`` in), then file what it waits for
        (a malformed request is thrown back in)."""
        plan = self.plans[i]
        while True:
            try:
                request = plan.send(answer) if error is None else plan.throw(error)
            except StopIteration as stop:
                self.outcomes[i] = stop.value
                return
            except Exception as exc:
                self.outcomes[i] = exc
                return
            if callable(request):
                self.start_job(i, request)
                return
            if _is_wait(request):
                break
            answer, error = None, TypeError(
                f"a plan yielded {request!r}: neither a wait (fd, seconds) nor a callable")
        fd, seconds = request
        self.waits[i] = (fd, time.monotonic() + seconds)
        waiting = self.fds.get(fd)
        if waiting is None:
            self.fds[fd] = [i]
            self.poll.register(fd, select.POLLIN)
        else:
            waiting.append(i)

    def stop_waiting(self, i: int) -> None:
        fd, _end = self.waits.pop(i)
        waiting = self.fds[fd]
        waiting.remove(i)
        if not waiting:
            del self.fds[fd]
            self.poll.unregister(fd)

    def start_job(self, i: int, fn: Callable[[], Any]) -> None:
        if self.wake_r < 0:
            self.wake_r, self.wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
            self.poll.register(self.wake_r, select.POLLIN)
        job = submit_blocking(fn)
        self.jobs[job] = i
        job.add_done_callback(self.wake)

    def wake(self, _job: Future[Any]) -> None:
        with self.wake_lock, contextlib.suppress(OSError):  # a full pipe wakes it all the same
            if self.wake_w >= 0:
                os.write(self.wake_w, b"\0")

    def abandon(self) -> None:
        """Interrupted: let the running blocking calls end, then close the plans left (closing
        one that has ended does nothing)."""
        wait_for_jobs(list(self.jobs))
        for plan in self.plans:
            with contextlib.suppress(Exception):
                plan.close()


def _is_wait(request: object) -> bool:
    """Whether ``request`` is a :data:`Wait`: a descriptor number and a number of seconds
    (infinite: no time limit), not NaN."""
    if not isinstance(request, tuple) or len(request) != 2:
        return False
    fd, seconds = request
    return (isinstance(fd, int) and not isinstance(fd, bool) and fd >= 0
            and isinstance(seconds, (int, float)) and not isinstance(seconds, bool)
            and not math.isnan(seconds))
