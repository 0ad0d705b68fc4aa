"""The result of grading one episode."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RewardResult"]


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
