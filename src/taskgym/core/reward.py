"""The result of grading one episode."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from taskgym.errors import SandboxError
from taskgym.sandbox.base import Session

__all__ = ["FailureClass", "RewardResult", "Verdict", "submitted_file"]


Verdict = Literal["graded", "none"]
"""``"graded"``: the verifier judged what the policy left. ``"none"``: the environment failed
(not the policy), so the episode has no reward to learn from."""


class FailureClass(StrEnum):
    """Why an episode has no verdict: each is a failure the policy cannot cause
    (docs/security.md has the rule and the table that decides each class)."""

    SANDBOX_START = "sandbox_start"
    """A sandbox (the agent's or the grader's) could not be started."""
    GRADER_DEPENDENCY = "grader_dependency"
    """Something the grader needs (pytest, an engine, a Python package) is not there."""
    GRADER_CRASH = "grader_crash"
    """The grader failed before it touched anything the policy left."""
    GRADER_TIMEOUT = "grader_timeout"
    """The grader ran out of time before it started on what the policy left."""
    REFERENCE = "reference"
    """The task's hidden files (tests, reference, check) are missing or broken."""
    TOOL_INFRASTRUCTURE = "tool_infrastructure"
    """A domain worker or engine died in a way the policy cannot cause, and could not be
    brought back."""
    HOST_RESOURCES = "host_resources"
    """The host ran out of descriptors, memory, disk or processes."""
    BACKEND_LOST = "backend_lost"
    """The sandbox backend went away (the docker engine stopped), or a sandbox was taken away
    from outside (bwrap's outer process killed from the host)."""
    TASKGYM_CRASH = "taskgym_crash"
    """An unexpected exception in taskgym or in the env's code (a bug to report)."""


class RewardResult(BaseModel):
    """What a verifier concluded about the agent's final state.

    ``score`` is the terminal reward. ``gate`` is False when a hard precondition failed
    (the work did not build, tests could not run to the end, the expected number of tests
    was not seen), in which case ``score`` is 0. ``components`` hold named partial signals
    (pass fraction, IoU, ...) for analysis or shaping; ``details`` say why, for humans.

    ``verdict`` is ``"graded"`` when the verifier judged what the policy left (every score
    above, zero included), and ``"none"`` when the environment failed instead: then
    ``failure`` names the class (:class:`FailureClass`), ``details["reason"]`` says what to do,
    and the score of 0 is not the policy's (leave such episodes out of training batches).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float = Field(ge=0.0, le=1.0)
    success: bool
    components: Mapping[str, float] = Field(default_factory=dict)
    gate: bool = True
    details: Mapping[str, Any] = Field(default_factory=dict)
    verdict: Verdict = "graded"
    failure: FailureClass | None = None

    @model_validator(mode="after")
    def _no_verdict_is_no_reward(self) -> RewardResult:
        if self.verdict == "none":
            if self.failure is None:
                raise ValueError("a result with no verdict names its failure class")
            if self.score != 0.0 or self.success or self.gate:
                raise ValueError("a result with no verdict has score 0, no success and no gate")
        elif self.failure is not None:
            raise ValueError("a graded result has no failure class")
        return self

    @property
    def graded(self) -> bool:
        """Whether the verifier judged the policy's work (``verdict == "graded"``)."""
        return self.verdict == "graded"

    @classmethod
    def no_verdict(cls, failure: FailureClass, reason: str, **details: Any) -> RewardResult:
        """The result of an episode the environment failed: no verdict, class ``failure``,
        ``reason`` saying what happened and what fixes it."""
        return cls(score=0.0, success=False, gate=False, verdict="none", failure=failure,
                   details={"reason": reason, **details})

    @classmethod
    def failed(cls, reason: str, **details: Any) -> RewardResult:
        """A zero reward whose gate failed, with the reason: a graded result (what the policy
        left failed a hard check)."""
        return cls(score=0.0, success=False, gate=False, details={"reason": reason, **details})

    @classmethod
    def from_rewards(cls, rewards: Mapping[str, float], **details: Any) -> RewardResult:
        """Harbor's reward file (``reward.txt`` or ``reward.json``): its ``reward`` key, or its
        only key, is the score (clipped to [0, 1]); every key is a component."""
        if "reward" in rewards:
            raw = rewards["reward"]
        elif len(rewards) == 1:
            raw = next(iter(rewards.values()))
        else:
            return cls.failed(f"reward.json has several rewards ({', '.join(rewards)}) but no "
                              "\"reward\" key to score by", **details)
        score = min(1.0, max(0.0, raw))
        return cls(score=score, success=score >= 1.0, components={**rewards, "reward": score},
                   details=details)

    def summary(self) -> str:
        """One line for transcripts and tables."""
        if self.verdict == "none":
            return f"no verdict ({self.failure}): {self.details.get('reason', '')}"
        parts = [f"score={self.score:.3f}", "success" if self.success else "failure"]
        if not self.gate:
            parts.append("gate failed")
        parts += [f"{k}={v:.3g}" for k, v in self.components.items()]
        reason = self.details.get("reason")
        if reason:
            parts.append(f"({reason})")
        return " ".join(parts)


def submitted_file(session: Session, path: str, limit: int) -> bytes | RewardResult:
    """The submitted file ``path`` of the session's workspace (at most ``limit`` bytes), or
    the failed result that says why there is nothing to grade."""
    try:
        data = session.read_file(path, limit=limit + 1)
    except (SandboxError, OSError, ValueError) as exc:
        return RewardResult.failed(f"nothing to grade: {path} is missing ({exc})")
    if len(data) > limit:
        return RewardResult.failed(f"{path} is over the {limit}-byte bound of a submission")
    return data
