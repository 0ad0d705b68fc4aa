"""The result of grading one episode."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from taskgym.errors import SandboxError
from taskgym.sandbox.base import Session

__all__ = ["RewardResult", "submitted_file"]


class RewardResult(BaseModel):
    """What a verifier concluded about the agent's final state.

    ``score`` is the terminal reward. ``gate`` is False when a hard precondition failed
    (the work did not build, tests could not run to the end, the expected number of tests
    was not seen), in which case ``score`` is 0. ``components`` hold named partial signals
    (pass fraction, IoU, ...) for analysis or shaping; ``details`` say why, for humans.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float = Field(ge=0.0, le=1.0)
    success: bool
    components: Mapping[str, float] = Field(default_factory=dict)
    gate: bool = True
    details: Mapping[str, Any] = Field(default_factory=dict)

    @classmethod
    def failed(cls, reason: str, **details: Any) -> RewardResult:
        """A zero reward whose gate failed, with the reason."""
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
