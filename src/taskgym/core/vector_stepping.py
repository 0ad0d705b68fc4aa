"""The two ways :class:`~taskgym.core.vector.TaskVectorEnv` steps its sub-envs at once:
:class:`Threads` (a fixed share of the calls per thread) and :class:`LoopStepper` (every
sub-env's step as a plan, all driven by one ``poll`` loop in the calling thread)."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat, TypeVar, cast

import gymnasium as gym
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

from taskgym.core.env import TaskEnv
from taskgym.core.wrappers import TaskMethods
from taskgym.sandbox.shell.plans import drive_plans

__all__ = ["LoopStepper", "Step", "Threads"]

T = TypeVar("T")
Step = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]


class Threads:
    """``workers - 1`` threads and the caller, each running a fixed share of a batch of calls
    (call ``i`` always runs in share ``i % workers``; a ``None`` call is skipped)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._pending = 0
        self._queues: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue()
                                                      for _ in range(workers - 1)]
        self._threads = [threading.Thread(target=self._serve, args=(q,), daemon=True,
                                          name=f"taskgym-vector-{k + 1}")
                         for k, q in enumerate(self._queues)]
        for thread in self._threads:
            thread.start()

    def run(self, calls: Sequence[Callable[[], T] | None]) -> list[T]:
        """Every call's result, in order (``None`` for a skipped call); the first exception is
        raised once all have run."""
        results: list[Any] = [None] * len(calls)
        errors: list[BaseException | None] = [None] * len(calls)
        shares = [range(k, len(calls), self.workers) for k in range(self.workers)]
        busy = [k for k in range(1, self.workers) if shares[k]]
        self._pending = len(busy)
        self._done.clear()
        for k in busy:
            self._queues[k - 1].put((calls, shares[k], results, errors))
        self._run_share(calls, shares[0], results, errors)
        if busy:
            self._done.wait()
        for error in errors:
            if error is not None:
                raise error
        return results

    @staticmethod
    def _run_share(calls: Sequence[Callable[[], Any] | None], share: range, results: list[Any],
                   errors: list[BaseException | None]) -> None:
        for i in share:
            call = calls[i]
            if call is None:
                continue
            try:
                results[i] = call()
            except BaseException as exc:  # handed to the caller, raised there
                errors[i] = exc

    def _serve(self, jobs: queue.SimpleQueue[Any]) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            self._run_share(*job)
            with self._lock:
                self._pending -= 1
                last = self._pending == 0
            if last:
                self._done.set()

    def stop(self) -> None:
        for jobs in self._queues:
            jobs.put(None)
        for thread in self._threads:
            thread.join()


class LoopStepper:
    """Steps sub-envs all at once from the calling thread: each one's
    :meth:`~taskgym.core.env.TaskEnv.poll_step`, driven together by
    :func:`~taskgym.sandbox.shell.plans.drive_plans` (one ``poll`` over every sub-env's sandbox)."""

    def task_envs(self, envs: Sequence[gym.Env[Any, Any]]) -> list[TaskEnv] | None:
        """:meth:`steppable` of every env, or ``None`` when one is not (looked at on every
        call: a wrapper may have been put on a sub-env, or a ``step`` on a wrapper)."""
        found = [self.steppable(env) for env in envs]
        if any(env is None for env in found):
            return None
        return cast(list[TaskEnv], found)

    @staticmethod
    def steppable(env: gym.Env[Any, Any]) -> TaskEnv | None:
        """``env``'s :class:`TaskEnv` when its ``poll_step`` does what ``env.step`` does: no
        wrapper but taskgym's :class:`~taskgym.core.wrappers.TaskMethods` and
        Gymnasium's order and first-step checks, both passed (a reset done, the first step
        checked), and no ``step`` of its own; else ``None``."""
        while isinstance(env, gym.Wrapper):
            if "step" in vars(env):
                return None
            if type(env) is TaskMethods:  # forwards to the env's own methods, step included
                passed = True
            elif type(env) is OrderEnforcing:
                passed = env.has_reset
            elif type(env) is PassiveEnvChecker:
                passed = env.checked_step
            else:
                return None
            if not passed:
                return None
            env = env.env
        if not isinstance(env, TaskEnv) or "step" in vars(env) or type(env).step is not TaskEnv.step:
            return None
        return env

    @staticmethod
    def step(envs: Sequence[TaskEnv], actions: Sequence[Any]) -> list[Step]:
        """Every env's step of its action, run at once; the first exception is raised once
        all have run. Interrupted (a ``KeyboardInterrupt``), the call waits for the blocking
        calls already running (a grade), closes the steps still waiting (their shells are
        restarted before their next command) and raises."""
        outcomes = drive_plans([env.poll_step(a) for env, a in zip(envs, actions, strict=True)])
        for outcome in outcomes:
            if isinstance(outcome, Exception):
                raise outcome
        return cast(list[Step], outcomes)
