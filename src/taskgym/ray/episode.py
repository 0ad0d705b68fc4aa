"""One episode stream of an :class:`~taskgym.ray.EnvPool`: :class:`PooledEnv`, the local
env's API (``areset``/``astep``/``aclose``, and ``reset``/``step``/``close``) with the env
itself in one of the pool's actors.

Each call is one actor call, never retried: a step is not idempotent (the agent's command may
have run). An actor that dies (its process killed, its node gone) takes its sandboxes with
it, so the step that was running, or the next one, ends the episode as the env ends an
episode whose backend went away: reward 0.0, ``terminated`` True, ``info["verdict"] ==
"none"``, ``info["failure"] == "backend_lost"``, ``info["error"]`` saying which actor and why,
``info["reward"]`` the :class:`~taskgym.core.reward.RewardResult` (no verdict). A reset whose
actor died before it answered is tried once more on the pool's least busy live actor (no
episode had started). Every call is a *plan* (a generator that yields Ray object refs), run by
awaiting the refs (async API) or by ``ray.get`` (blocking API), so both give the same results.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from taskgym.core.env_step import OVER, Observation, StepResult, utf8
from taskgym.core.reward import FailureClass, RewardResult
from taskgym.core.spaces import UnicodeText
from taskgym.errors import NoVerdictError, SandboxLostError, TaskgymError
from taskgym.ray.host import PoolCapacityError, SessionLost
from taskgym.sandbox.shell.plans import answer_each, answer_each_async

if TYPE_CHECKING:
    from taskgym.ray.pool import ActorSlot, EnvPool

__all__ = ["PooledEnv", "drive", "drive_async"]

Plan = Generator[Any, Any, Any]
"""Yields Ray object refs (answered with their values, or their exceptions thrown in)."""


def drive(plan: Plan, timeout: float | None = None) -> Any:
    """Run ``plan`` by blocking on each ref (``ray.get``, for at most ``timeout`` seconds)."""
    import ray

    return answer_each(plan, lambda ref: ray.get(ref, timeout=timeout))


async def drive_async(plan: Plan, timeout: float | None = None) -> Any:
    """Run ``plan`` by awaiting each ref (for at most ``timeout`` seconds)."""
    return await answer_each_async(plan, lambda ref: asyncio.wait_for(ref, timeout))


class PooledEnv(gym.Env[Observation, Any]):
    """An env of the pool's ``env_id`` whose episodes run in one of the pool's actors (made by
    :meth:`EnvPool.env`; the actor is chosen at the first reset). Use the asyncio API or the
    blocking one, as with a local env; one call of an episode at a time."""

    def __init__(self, pool: EnvPool) -> None:
        self.pool = pool
        self.session = uuid.uuid4().hex
        """This env's id in its actor."""
        self.observation_space = gym.spaces.Dict({"text": UnicodeText()})  # type: ignore[assignment]
        self.slot: ActorSlot | None = None
        """The pool's record of the actor holding this env (``None`` before a reset, and
        after a close or the actor's death)."""
        self._task_id: str | None = None
        self._steps = 0

    # -- plans (one code path for both APIs) ---------------------------------------------
    def _reset_plan(self, seed: int | None, options: dict[str, Any] | None) -> Plan:
        for attempt in (1, 2):
            claimed = self.slot is None
            slot = self.pool.claim(self)
            try:
                ref = self.pool.call(slot, "reset", self.session, seed, options)
            except PoolCapacityError:
                if claimed:  # nothing of this env is on the actor yet: its session is free
                    self.pool.release(self)
                raise
            try:
                obs, info = yield ref
            except Exception as exc:
                if not self.pool.is_actor_failure(exc):
                    raise _taskgym_cause(exc) from None
                self.pool.release(self, exc)
                if attempt == 2:
                    raise SandboxLostError(f"{_lost_reason(slot, exc)}; reset again") from exc
                continue
            finally:
                self.pool.answered(slot)
            self._task_id, self._steps = info.get("task_id"), 0
            return obs, info
        raise AssertionError("unreachable")

    def _step_plan(self, action: Any) -> Plan:
        slot = self.slot  # None before a reset, after a close or the actor's loss
        if slot is None or self.pool.closed:
            info = {"task_id": self._task_id, "error": OVER}
            return {"text": f"error: {OVER}"}, 0.0, True, False, info
        try:
            ref = self.pool.call(slot, "step", self.session, action)
        except (TypeError, ValueError, AttributeError):  # Ray cannot serialize it
            ref = self.pool.call(slot, "step", self.session, repr(action))
        try:
            result: StepResult = yield ref
        except Exception as exc:
            if not (self.pool.is_actor_failure(exc) or isinstance(exc, SessionLost)):
                raise _taskgym_cause(exc) from None
            return self._lost(slot, exc)
        finally:
            self.pool.answered(slot)
        self._steps = int(result[4].get("step") or self._steps + 1)
        return result

    def _close_plan(self) -> Plan:
        slot = self.slot
        if slot is None:
            return None
        try:
            ref = self.pool.close_call(slot, self.session)  # never refused for the limit
            if ref is not None:
                yield ref
        except Exception as exc:
            if not (self.pool.is_actor_failure(exc) or isinstance(exc, TaskgymError)):
                raise
        finally:
            self.pool.release(self)
        return None

    def _lost(self, slot: ActorSlot, exc: BaseException) -> StepResult:
        """The end of an episode whose actor died (or lost it in a restart): no verdict."""
        self.pool.release(self, exc)
        self._steps += 1
        reason = (f"{_lost_reason(slot, exc)}; the episode's sandbox went with it, so the "
                  "episode has no verdict (reset() starts a new one)")
        result = RewardResult.no_verdict(FailureClass.BACKEND_LOST, reason)
        error = utf8(result.summary())
        if self.pool.make_kwargs.get("on_no_verdict") == "raise":
            raise NoVerdictError(error, failure=str(result.failure), reason=reason, result=result)
        crash = {"type": type(exc).__name__, "message": utf8(str(exc))[:2000],
                 "where": f"Ray actor {slot.index}"}
        info = {"task_id": self._task_id, "step": self._steps, "reward": result,
                "verdict": result.verdict, "failure": str(result.failure), "error": error,
                "crash": crash}
        return {"text": f"error: {error}"}, 0.0, True, False, info

    # -- asyncio API -----------------------------------------------------------------------
    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
                     ) -> tuple[Observation, dict[str, Any]]:
        """Start an episode (the local env's ``areset``); raises
        :class:`~taskgym.ray.PoolCapacityError` when every session of the pool holds an
        episode or the actor has ``max_pending_calls`` calls already."""
        super().reset(seed=seed)
        result: tuple[Observation, dict[str, Any]] = await drive_async(
            self._reset_plan(seed, options))
        return result

    async def astep(self, action: Any) -> StepResult:
        """One step (the local env's ``astep``); never raises for what the agent sends."""
        result: StepResult = await drive_async(self._step_plan(action))
        return result

    async def aclose(self) -> None:
        """Close this env's sandbox and give its session back to the pool."""
        await drive_async(self._close_plan())

    # -- blocking API ----------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Observation, dict[str, Any]]:
        super().reset(seed=seed)
        result: tuple[Observation, dict[str, Any]] = drive(self._reset_plan(seed, options))
        return result

    def step(self, action: Any) -> StepResult:
        result: StepResult = drive(self._step_plan(action))
        return result

    def close(self) -> None:
        drive(self._close_plan())

    @property
    def node_id(self) -> str | None:
        """The Ray node of this env's actor (``None`` before the first reset)."""
        return self.slot.node_id if self.slot is not None else None


def _lost_reason(slot: ActorSlot, exc: BaseException) -> str:
    first_line = utf8(str(exc)).strip().splitlines()[0] if str(exc).strip() else ""
    return (f"the Ray actor {slot.index} of the EnvPool (node {slot.node_id}, host "
            f"{slot.hostname}, pid {slot.pid}) is gone ({type(exc).__name__}: {first_line[:300]})")


def _taskgym_cause(exc: Exception) -> Exception:
    """The taskgym error an actor raised (Ray wraps it in a ``RayTaskError``), else ``exc``."""
    cause = getattr(exc, "cause", None)
    return cause if isinstance(cause, TaskgymError) else exc
