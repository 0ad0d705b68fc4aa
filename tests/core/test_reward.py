"""RewardResult: bounds, failed(), summary()."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from taskgym.core.reward import RewardResult


@pytest.mark.parametrize("score", [0.0, 0.5, 1.0])
def test_scores_in_bounds(score):
    result = RewardResult(score=score, success=score == 1.0)
    assert result.score == score
    assert result.gate is True
    assert dict(result.components) == {} and dict(result.details) == {}


@pytest.mark.parametrize("score", [-0.001, 1.0001, 2, -1, float("nan"), float("inf")])
def test_scores_out_of_bounds(score):
    with pytest.raises(ValidationError):
        RewardResult(score=score, success=False)


def test_success_is_required_and_extra_fields_forbidden():
    with pytest.raises(ValidationError, match="success"):
        RewardResult(score=1.0)  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="bonus"):
        RewardResult(score=1.0, success=True, bonus=1)  # type: ignore[call-arg]


def test_frozen():
    result = RewardResult(score=0.5, success=False)
    with pytest.raises(ValidationError):
        result.score = 1.0  # type: ignore[misc]


def test_failed():
    result = RewardResult.failed("no tests were collected", log="boom", exit_status=4)
    assert result.score == 0.0
    assert result.success is False
    assert result.gate is False
    assert dict(result.details) == {"reason": "no tests were collected", "log": "boom",
                                    "exit_status": 4}
    assert dict(result.components) == {}


def test_summary_success_with_components():
    result = RewardResult(score=1.0, success=True,
                          components={"pass_fraction": 1.0, "tests_passed": 13.0})
    assert result.summary() == "score=1.000 success pass_fraction=1 tests_passed=13"


def test_summary_partial_failure():
    result = RewardResult(score=0.25, success=False, components={"iou": 0.123456},
                          details={"log": "x"})
    assert result.summary() == "score=0.250 failure iou=0.123"


def test_summary_failed_gate_with_reason():
    result = RewardResult.failed("the tests ran past 120s")
    assert result.summary() == "score=0.000 failure gate failed (the tests ran past 120s)"


def test_summary_gate_false_without_reason():
    result = RewardResult(score=0.0, success=False, gate=False, components={"pass_fraction": 0.5})
    assert result.summary() == "score=0.000 failure gate failed pass_fraction=0.5"
