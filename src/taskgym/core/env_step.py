"""One step of a :class:`~taskgym.core.env.TaskEnv` (tool dispatch): ``step`` and ``astep`` run
one code path.

A step is a plan (the generator :meth:`EnvStepping.step_plan`): count the step, parse the
action, then *yield* what blocks, for a driver to do and send back, then fold the answers into
the observation, reward and info. It yields at most twice:

- the :class:`~taskgym.core.tool.ToolCall` to run, answered with its
  :class:`~taskgym.core.tool.ToolResult` (or the exception it raised, thrown in);
- ``None`` when the episode ends: grade it, answered with the
  :class:`~taskgym.core.reward.RewardResult` (or the exception, thrown in).

``step`` answers them in the calling thread; ``astep`` awaits the tool's ``arun`` (or runs
``run`` in the bounded pool) and grades in the pool; ``poll_step`` is a plan of
:mod:`taskgym.sandbox.shell.plans` (the tool's ``plan``, else ``run`` and grading in the pool), for
the vector env's loop. Everything else (budgets, errors, crashes,
the transcript) is the plan's, so both give the same observations.
"""

from __future__ import annotations

import functools
import time
import traceback
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from taskgym.core.reward import FailureClass, RewardResult
from taskgym.core.tool import ActionError, Tool, ToolCall, ToolResult, parse_action
from taskgym.core.verdicts import no_verdict_of
from taskgym.errors import NoVerdictError, TaskgymError
from taskgym.sandbox.host.blocking import run_blocking
from taskgym.sandbox.shell.plans import answer_each, answer_each_async

if TYPE_CHECKING:
    from collections.abc import Mapping

    from taskgym.core.task import Limits, Task
    from taskgym.sandbox import ResourceUsage, Session
    from taskgym.sandbox.grading.warm_leases import Lease
    from taskgym.sandbox.shell.plans import Plan

__all__ = ["EnvStepping", "Observation", "StepPlan", "StepResult", "describe", "utf8"]

Observation = dict[str, str]
StepResult = tuple[Observation, float, bool, bool, dict[str, Any]]
"""What ``step`` returns: observation, reward, terminated, truncated, info."""
StepPlan = Generator["ToolCall | None", Any, StepResult]
"""A step to drive (see the module's docstring)."""

OVER = "the episode is over; call reset() to start a new one"


class EnvStepping:
    """``step``, ``astep`` and ``poll_step``, for :class:`~taskgym.core.env.TaskEnv` (which owns the
    state they use)."""

    if TYPE_CHECKING:  # what TaskEnv provides
        task: Task | None
        render_mode: str | None
        episode_limits: Limits
        last_reward: RewardResult | None
        last_usage: ResourceUsage
        on_no_verdict: str
        _tools_by_name: Mapping[str, Tool]
        _over: bool
        _steps: int
        _deadline: float
        _transcript: list[str]
        _lease: Lease | None

        @property
        def session(self) -> Session: ...

        def grade_episode(self) -> RewardResult: ...

        def _end_session(self) -> None: ...

    def step(self, action: Any) -> StepResult:
        def answer(request: ToolCall | None) -> Any:
            return self.grade_episode() if request is None else request.tool.run(request.args)

        result: StepResult = answer_each(self.step_plan(action), answer)
        return self._delivered(result)

    async def astep(self, action: Any) -> StepResult:
        """:meth:`step` for asyncio, with the same observations. A tool's ``arun`` is
        awaited (``bash`` drives a local or docker sandbox's shell from the event loop, with
        no thread); a tool without one, and grading, run in the bounded pool. One step of an
        env at a time: a second ``astep`` while one runs is an error observation. Never
        raises for anything the agent sends. A subclass that overrides :meth:`step` has it
        run as it is, in the pool."""
        if type(self).step is not EnvStepping.step:
            return await run_blocking(self.step, action)

        async def answer(request: ToolCall | None) -> Any:
            if request is None:
                return await run_blocking(self.grade_episode)
            tool, arun = request.tool, request.tool.arun
            return await (arun(request.args) if arun is not None
                          else run_blocking(tool.run, request.args))

        result: StepResult = await answer_each_async(self.step_plan(action), answer)
        return self._delivered(result)

    def poll_step(self, action: Any) -> Plan[StepResult]:
        """:meth:`step` as a plan (:mod:`taskgym.sandbox.shell.plans`), for a driver that runs many
        at once in one thread (the vector env's loop), with the same observations: the
        tool's ``plan`` (``bash`` waits on the local sandbox's shell), or its ``run`` in the
        bounded pool; grading in the pool."""
        plan = self.step_plan(action)
        try:
            request = plan.send(None)
            while True:
                try:
                    if request is None:
                        answer: Any = yield self.grade_episode
                    elif request.tool.plan is not None:
                        answer = yield from request.tool.plan(request.args)
                    else:
                        answer = yield functools.partial(request.tool.run, request.args)
                except Exception as exc:  # the plan decides: an error result, or a crash
                    request = plan.throw(exc)
                else:
                    request = plan.send(answer)
        except StopIteration as done:
            result: StepResult = done.value
            return self._delivered(result)

    def step_plan(self, action: Any) -> StepPlan:
        """The step of ``action``, for a driver to run (see the module's docstring)."""
        task = self.task
        info: dict[str, Any] = {"task_id": task.id if task is not None else None}
        if self._over:
            info["error"] = OVER
            return {"text": f"error: {OVER}"}, 0.0, True, False, info
        self._steps = steps = self._steps + 1
        info["step"] = steps
        call = parse_action(action, self._tools_by_name)
        if isinstance(call, ActionError):
            result = ToolResult(f"error: {call.message}", call.message)
        else:
            info["tool"] = call.tool.name
            try:
                result = yield call
            except Exception as exc:
                if not isinstance(exc, TaskgymError):  # a bug, not the agent's doing
                    return self._crash(exc, f"the {call.tool.name} tool", action, info)
                result = ToolResult(f"error: {exc}", str(exc))
        text, terminated, truncated = self._tool_done(result, info)
        reward = 0.0
        if terminated or truncated:
            try:
                graded: RewardResult = yield None
            except Exception as exc:  # the verifier or the sandbox's stop crashed
                return self._crash(exc, "grading", action, info)
            reward = graded.score
            info["reward"] = graded
            info["verdict"] = graded.verdict
            info["usage"] = {"cpu_sec": self.last_usage.cpu_sec,
                             "peak_memory_bytes": self.last_usage.peak_memory_bytes}
            if graded.verdict == "none":  # the environment failed: an end, not a truncation
                terminated, truncated = True, False
                info["failure"] = str(graded.failure)
                info["error"] = utf8(graded.summary())  # "no verdict (<class>): <reason>"
                text += f"\n[{info['error']}]"
            else:
                text += f"\n[graded: {graded.summary()}]"
        text = utf8(text)
        if self.render_mode == "ansi":
            self._transcript.append(f"$ {describe(action)}\n{text}")
        return {"text": text}, reward, terminated, truncated, info

    def _delivered(self, result: StepResult) -> StepResult:
        """``result``, or the :class:`NoVerdictError` it stands for when the episode ended
        with no verdict and the env was made with ``on_no_verdict="raise"`` (the sandbox is
        already gone: ``reset()`` starts the next episode)."""
        info = result[4]
        if info.get("verdict") == "none" and self.on_no_verdict == "raise":
            verdictless: RewardResult = info["reward"]
            reason = str(verdictless.details.get("reason", ""))
            raise NoVerdictError(str(info["error"]), failure=str(verdictless.failure),
                                 reason=reason, result=verdictless)
        return result

    def _tool_done(self, result: ToolResult, info: dict[str, Any]) -> tuple[str, bool, bool]:
        """Fold the tool's result into ``info``: the step's text so far, and whether the
        episode ends (terminated, truncated)."""
        if result.error is not None:
            info["error"] = utf8(result.error)
        if result.info:
            info.update(result.info)
        if result.images:
            info["images"] = list(result.images)
        if result.done:
            return result.text, True, False
        steps, limits = self._steps, self.episode_limits
        if steps >= limits.max_steps:
            return result.text + "\n[step limit reached]", False, True
        if time.monotonic() >= self._deadline:
            return result.text + "\n[time limit reached]", False, True
        return result.text, False, False

    def _crash(self, exc: Exception, where: str, action: Any, info: dict[str, Any]
               ) -> StepResult:
        """End the episode after an unexpected exception in ``where`` with no verdict: the
        docker engine gone (``backend_lost``), else a bug (``taskgym_crash``)."""
        self._over = True
        crash = {"type": type(exc).__name__, "message": utf8(str(exc))[:2000], "where": where,
                 "traceback": utf8("".join(traceback.format_exception(exc)))}
        try:
            self._end_session()
        except Exception as cleanup:  # the crash itself may have broken the sandbox
            crash["cleanup"] = utf8(f"{type(cleanup).__name__}: {cleanup}")[:2000]
        result = no_verdict_of(exc)
        if result is None:
            message = (f"taskgym crashed in {where}: {crash['type']}: {crash['message']}. This "
                       "is a bug in taskgym or in the env, not the agent's doing; the episode "
                       "is over with no verdict (info['crash'] has the traceback; please report "
                       "it)")
            result = RewardResult.no_verdict(FailureClass.TASKGYM_CRASH, message)
        else:
            message = f"no verdict ({result.failure}) in {where}: {result.details['reason']}"
        self.last_reward = result
        info.update(error=utf8(message), crash=crash, reward=result, verdict=result.verdict,
                    failure=str(result.failure))
        text = f"error: {info['error']}"
        if self.render_mode == "ansi":
            self._transcript.append(f"$ {describe(action)}\n{text}")
        return {"text": text}, 0.0, True, False, info


def describe(action: Any) -> str:
    """``action`` as the transcript shows it (at most 400 characters; never raises)."""
    try:
        text = action if isinstance(action, str) else repr(action)
    except Exception as exc:  # an odd object's __repr__
        text = f"<{type(action).__name__} whose repr raised {type(exc).__name__}>"
    return utf8(text if len(text) < 400 else text[:400] + "...")


def utf8(text: str) -> str:
    """``text`` with any lone surrogate written as an escape, so that it encodes as UTF-8."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
