"""Plans (taskgym.sandbox.shell.plans): the driver that runs many at once, and commands as plans.

The driver's tests wait on pipes (no sandbox); tests taking ``backend`` run on every backend.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from taskgym.errors import SandboxError
from taskgym.sandbox import Backend, ExecResult, SandboxSpec
from taskgym.sandbox.host.os_errors import guard
from taskgym.sandbox.local import LocalBackend
from taskgym.sandbox.shell.plans import Plan, drive_plans


@pytest.fixture
def pipes() -> Iterator[Callable[[], tuple[int, int]]]:
    """Make pipes, all closed after the test."""
    made: list[int] = []

    def pipe() -> tuple[int, int]:
        r, w = os.pipe()
        made.extend((r, w))
        return r, w

    yield pipe
    for fd in made:
        os.close(fd)


def _fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_waits_end_when_readable_or_at_their_time(pipes: Callable[[], tuple[int, int]]) -> None:
    (ready_r, ready_w), (idle_r, _idle_w) = pipes(), pipes()

    def reads(fd: int, seconds: float) -> Plan[tuple[bool, float]]:
        started = time.monotonic()
        readable = yield (fd, seconds)
        return readable, time.monotonic() - started

    def writes_then_reads() -> Plan[str]:
        yield from ()
        os.write(ready_w, b"x")
        return "wrote"

    wrote, (readable, took), (idle, waited) = drive_plans(
        [writes_then_reads(), reads(ready_r, 30.0), reads(idle_r, 0.3)])
    assert wrote == "wrote" and readable is True and took < 5
    assert idle is False and 0.25 < waited < 5


def test_calls_run_in_the_pool_and_their_errors_are_thrown_in() -> None:
    threads: list[str] = []

    def work() -> int:
        threads.append(threading.current_thread().name)
        time.sleep(0.2)
        return 7

    def fails() -> None:
        raise ValueError("from the pool")

    def uses(call: Callable[[], Any]) -> Plan[object]:
        try:
            return (yield call)
        except ValueError as exc:
            return f"caught {exc}"

    started = time.monotonic()
    outcomes = drive_plans([uses(work), uses(fails), uses(work)])
    assert outcomes == [7, "caught from the pool", 7]
    assert all(name.startswith("taskgym-blocking") for name in threads), threads
    assert time.monotonic() - started < 0.39, "the two calls did not run at once"


def test_a_plan_that_raises_leaves_the_others_to_end(pipes: Callable[[], tuple[int, int]]) -> None:
    r, w = pipes()
    os.write(w, b"x")

    def broken() -> Plan[None]:
        yield (r, 5.0)
        raise RuntimeError("a bug in one plan")

    def fine() -> Plan[str]:
        yield (r, 5.0)
        return "fine"

    error, result = drive_plans([broken(), fine()])
    assert isinstance(error, RuntimeError) and str(error) == "a bug in one plan"
    assert result == "fine"


def test_an_interrupt_closes_the_plans_left_after_their_calls_end(
        pipes: Callable[[], tuple[int, int]]) -> None:
    idle_r, _idle_w = pipes()
    ended: list[str] = []
    before = _fds()

    def waits() -> Plan[None]:
        try:
            yield (idle_r, 30.0)
        finally:
            ended.append("waiting plan closed")

    def calls() -> Plan[None]:
        def slow() -> None:
            time.sleep(0.3)
            ended.append("call ended")

        try:
            yield slow
        finally:
            ended.append("calling plan closed")

    def interrupted() -> Plan[None]:
        yield (idle_r, 0.05)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        drive_plans([waits(), calls(), interrupted()])
    assert ended[0] == "call ended" and sorted(ended[1:]) == ["calling plan closed",
                                                              "waiting plan closed"], ended
    assert _fds() == before, "the driver's wake-up pipe was left open"


def test_a_guarded_plan_turns_an_os_error_into_a_sandbox_error() -> None:
    class Holder:
        def plan(self, path: str) -> Plan[bytes]:
            yield from ()
            with open(path, "rb") as file:
                return file.read()

    planned = guard("read_file", Holder.plan)
    [error] = drive_plans([planned(Holder(), "/no/such/file")])
    assert isinstance(error, SandboxError) and "/no/such/file" in str(error)


# -- Session.exec_plan: exec's results, driven as plans --------------------------------------

def _both_ways(backend: Backend, commands: list[tuple[str, float | None]]
               ) -> tuple[list[ExecResult], list[ExecResult]]:
    """``commands`` run with ``exec`` in one session and as plans in another."""
    spec = SandboxSpec(stream_limit_bytes=1 << 20)
    with backend.start(spec) as session:
        sync = [session.exec(command, timeout) for command, timeout in commands]
    with backend.start(spec) as session:
        planned = [drive_plans([session.exec_plan(command, timeout)])[0]
                   for command, timeout in commands]
    assert all(isinstance(result, ExecResult) for result in planned), planned
    return sync, planned  # type: ignore[return-value]


def test_exec_plan_gives_what_exec_gives(backend: Backend) -> None:
    commands: list[tuple[str, float | None]] = [
        ("cd /tmp && export X=1", None), ("echo $X; pwd; echo err >&2; false", None),
        ("sleep 30", 1.0), ("echo after", None), ("yes", 30.0), ("cd /tmp; exit 7", None),
        ("pwd", None)]
    sync, planned = _both_ways(backend, commands)
    def seen(result: ExecResult) -> tuple[object, ...]:  # pids in bash's notes may differ
        return (result.stdout[:100], re.sub(r"\d+", "N", result.stderr[:100]), result.exit_code,
                result.timed_out, result.truncated, result.restarted)

    for one, other in zip(sync, planned, strict=True):
        assert seen(one) == seen(other), (one, other)
    assert planned[1].stdout == "1\n/tmp\n" and planned[1].exit_code == 1
    assert planned[2].timed_out and planned[2].exit_code == 124 and planned[2].duration_sec < 5
    assert planned[4].truncated and planned[5].restarted and planned[5].exit_code == 7
    assert planned[6].stdout == "/app\n"


@pytest.mark.sandbox
def test_many_local_sessions_are_waited_on_together(local_backend: LocalBackend) -> None:
    sessions = [local_backend.start(SandboxSpec()) for _ in range(6)]
    try:
        started = time.monotonic()
        results = drive_plans([s.exec_plan(f"sleep 1; echo {i}") for i, s in enumerate(sessions)])
        took = time.monotonic() - started
    finally:
        for session in sessions:
            session.close()
    assert [r.stdout for r in results if isinstance(r, ExecResult)] == [f"{i}\n" for i in range(6)]
    assert took < 3, f"6 sleeps of 1 s took {took:.1f} s: not waited on together"


@pytest.mark.sandbox
def test_a_second_plan_on_a_busy_session_is_refused_and_a_closed_one_recovers(
        local_backend: LocalBackend) -> None:
    with local_backend.start(SandboxSpec()) as session:
        session.exec("export KEPT=no")
        busy = session.exec_plan("sleep 30")
        fd, _seconds = next(busy)  # the command runs; its plan waits on the status socket
        assert isinstance(fd, int)
        [refused] = drive_plans([session.exec_plan("echo two")])
        assert isinstance(refused, SandboxError) and "one command at a time" in str(refused)
        busy.close()  # as an interrupted driver does: the shell's state is unknown
        started = time.monotonic()
        after = session.exec("echo after; echo ${KEPT:-reset}")
        assert after.stdout == "after\nreset\n" and after.exit_code == 0, after
        assert time.monotonic() - started < 10, "the next command waited for the sleep"


def test_a_malformed_request_is_thrown_back_into_its_plan(
        pipes: Callable[[], tuple[int, int]]) -> None:
    """What is neither a wait nor a callable comes back into the plan as a ``TypeError``, and
    a wait on a descriptor that is not open as an ``OSError``: the plan may handle either,
    and the other plans end as usual."""
    ready_r, ready_w = pipes()
    not_open = 2**30  # above any descriptor table here: no other thread can open it meanwhile

    def asks(request: Any) -> Plan[str]:
        try:
            yield request
        except TypeError as error:
            return f"TypeError: {error}"
        except OSError as error:
            return f"OSError {error.errno}"
        return "answered"

    def unhandled() -> Plan[str]:
        yield "not a request"
        return "answered"

    def forever() -> Plan[bool]:  # an infinite wait: no time limit, ends when readable
        os.write(ready_w, b"x")
        return (yield (ready_r, float("inf")))

    outcomes = drive_plans([asks((0, 1.0, 2)), asks(("fd", 1.0)), asks((0, float("nan"))),
                            asks((-1, 1.0)), asks((True, 1.0)), asks((not_open, 5.0)),
                            unhandled(), forever()])
    for outcome in outcomes[:5]:
        assert isinstance(outcome, str) and outcome.startswith("TypeError: a plan yielded"), outcome
    assert outcomes[5] == "OSError 9"
    assert isinstance(outcomes[6], TypeError) and "'not a request'" in str(outcomes[6])
    assert outcomes[7] is True
