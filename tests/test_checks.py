"""check_task_env: every registered id passes, and each kind of broken env is caught."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import taskgym
from taskgym import checks
from taskgym.core.reward import FailureClass, RewardResult
from taskgym.core.tool import SubmitArgs, Tool, ToolResult
from taskgym.domains.coding import CodingEnv
from taskgym.fuzz import fuzz_env

pytestmark = pytest.mark.sandbox

EVERY_CHECK = ["gymnasium_check_env", "tool_schemas", "fuzz_500_garbage_actions",
               "truncation_by_step_limit_then_step_after_the_end", "truncation_by_time_limit",
               "reset_seed_picks_the_same_task", "close_twice_leaves_nothing",
               "verifier_malformed_submissions_are_graded",
               "verifier_same_state_same_verdict_20_grades", "oracle_1_null_0",
               "oracle_1_null_0_generated"]


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(taskgym.list_envs()))
def test_every_registered_env_passes(env_id: str) -> None:
    report = taskgym.check_task_env(env_id, tasks_per_set=1)
    env = taskgym.make(env_id).unwrapped
    expected = [c for c in EVERY_CHECK if env.generators or not c.endswith("_generated")]
    env.close()
    assert list(report) == expected
    assert report == dict.fromkeys(expected, "ok")


class _Broken(CodingEnv):
    """A coding env with a bad tool name, an oracle that does nothing, and a tool bug."""

    def make_tools(self) -> list[Tool]:
        def buggy(_args: Any) -> ToolResult:
            raise IndexError("a bug in a tool")

        return [*super().make_tools(), Tool("bad name", "Has a bug.", SubmitArgs, buggy)]

    def oracle_actions(self, task: Any) -> list[dict[str, Any]]:
        return [{"tool": "submit", "args": {}}]


@pytest.mark.slow
def test_a_broken_env_fails_the_checks_that_catch_it(tmp_path: Path, answer_task: Any) -> None:
    answer_task(tmp_path / "t")
    env = _Broken(tasks=tmp_path)
    try:
        report = checks.check_task_env(env, tasks_per_set=1, grades=20)
    finally:
        env.close()
    assert report["tool_schemas"] == ("tool name 'bad name' is not a valid OpenAI function name "
                                      "(letters, digits, _ and -, at most 64)")
    assert report["oracle_1_null_0"].startswith(
        "oracle on t: score 0.0, success False (want 1.0, True, graded): ")
    assert report["oracle_1_null_0_generated"].startswith("oracle on ")
    # check_env and the fuzzing may or may not call the buggy tool: whether they pass varies
    passing = set(EVERY_CHECK) - {"tool_schemas", "oracle_1_null_0", "oracle_1_null_0_generated",
                                  "fuzz_500_garbage_actions", "gymnasium_check_env"}
    assert {name: report[name] for name in passing} == dict.fromkeys(passing, "ok")


def test_fuzzing_finds_a_crashing_tool(tmp_path: Path, answer_task: Any) -> None:
    answer_task(tmp_path / "t")
    env = _Broken(tasks=tmp_path, max_steps=1000)
    try:
        report = fuzz_env(env, 60, seed=0, execute=1.0)
    finally:
        env.close()
    assert report.problems
    assert any("the env crashed in the bad name tool: IndexError: a bug in a tool" in p
               for p in report.problems)


def test_tool_schemas_check_catches_a_schema_that_disagrees(tmp_path: Path,
                                                           answer_task: Any) -> None:
    class Odd(BaseModel):
        count: int

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return {"type": "object", "properties": {"count": {"type": "string"}}}

    class _OddSchema(CodingEnv):
        def make_tools(self) -> list[Tool]:
            return [*super().make_tools(), Tool("odd", "d", Odd, lambda a: ToolResult("x"))]

    class _BadSchema(CodingEnv):
        def make_tools(self) -> list[Tool]:
            class Bad(Odd):
                @classmethod
                def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
                    return {"type": "object", "properties": {"count": {"type": 5}}}

            return [*super().make_tools(), Tool("bad", "d", Bad, lambda a: ToolResult("x"))]

    answer_task(tmp_path / "t")
    for cls, expected in ((_OddSchema, "odd: {'count': "), (_BadSchema, "bad: not a valid JSON "
                                                            "Schema: 5 is not valid under any")):
        env = cls(tasks=tmp_path)
        try:
            with pytest.raises(checks.CheckFailed) as failed:
                checks.CHECKS["tool_schemas"](env, cls)
        finally:
            env.close()
        assert str(failed.value).startswith(expected), str(failed.value)


def test_host_state_sees_a_live_sandbox(tmp_path: Path, answer_task: Any) -> None:
    answer_task(tmp_path / "t")
    before = checks.host_state()
    env = taskgym.make("coding-terminal-v0", tasks=str(tmp_path))
    try:
        env.reset(seed=0)
        during = checks.host_state() - before
        assert any(item.startswith("process ") for item in during), during
    finally:
        env.close()


def test_oracle_then_null_reports_both_agents(tmp_path: Path, answer_task: Any) -> None:
    answer_task(tmp_path / "good")
    answer_task(tmp_path / "free", solve="true\n")
    (tmp_path / "free" / "environment" / "files" / "answer.txt").write_text("42\n")  # null wins
    env = taskgym.make("coding-terminal-v0", tasks=str(tmp_path))
    try:
        oracle, null, problems = checks.oracle_then_null(env, task_id="good")
        assert (oracle.score, null.score, problems) == (1.0, 0.0, [])
        _, _, problems = checks.oracle_then_null(env, task_id="free")
        assert len(problems) == 1
        assert problems[0].startswith("null on free: score 1.0, success True (want 0.0, False, "
                                      "graded)")
    finally:
        env.close()


# -- the verifier's contract --------------------------------------------------------------
# (these play one small task, so the determinism check grades 3 times, not the 20 that
# check_task_env does by default: the same code, kept fast)


class _Flaky(CodingEnv):
    """A verifier whose grade of one final state changes from one grade to the next."""

    graded = 0

    def verify(self, task: Any, session: Any) -> RewardResult:
        _Flaky.graded += 1
        if _Flaky.graded % 3 == 0:
            return RewardResult.no_verdict(FailureClass.GRADER_TIMEOUT, "ran out of time")
        return super().verify(task, session)


class _Fragile(CodingEnv):
    """A verifier that raises on a submission it did not expect (notes.txt not UTF-8)."""

    def verify(self, task: Any, session: Any) -> RewardResult:
        session.read_file("notes.txt", limit=10_000).decode("utf-8")
        return super().verify(task, session)


class _NoVerdictForNull(CodingEnv):
    """A verifier that cannot grade an unsolved workspace (no verdict, score 0)."""

    def verify(self, task: Any, session: Any) -> RewardResult:
        result = super().verify(task, session)
        if not result.success:
            return RewardResult.no_verdict(FailureClass.GRADER_CRASH, "the grader crashed")
        return result


def test_the_verifier_contract_holds_for_a_sound_env(tmp_path: Path, answer_task: Any) -> None:
    answer_task(tmp_path / "t")
    env = CodingEnv(tasks=tmp_path)
    try:
        checks._malformed_submissions(env, CodingEnv)
        checks._same_state_same_verdict(3)(env, CodingEnv)
    finally:
        env.close()


def test_a_verifier_that_changes_its_mind_fails_the_determinism_check(
        tmp_path: Path, answer_task: Any) -> None:
    answer_task(tmp_path / "t")
    env = _Flaky(tasks=tmp_path)
    _Flaky.graded = 0
    try:
        with pytest.raises(checks.CheckFailed) as failed:
            checks._same_state_same_verdict(3)(env, _Flaky)
    finally:
        env.close()
    assert str(failed.value) == (
        "the same final state graded 3 times gave 2 x (verdict graded, score 1.0, success True), "
        "1 x (verdict none, score 0.0, success False)")


def test_a_verifier_that_raises_on_a_malformed_submission_fails(tmp_path: Path,
                                                                answer_task: Any) -> None:
    answer_task(tmp_path / "t")
    env = _Fragile(tasks=tmp_path)
    try:
        with pytest.raises(checks.CheckFailed) as failed:
            checks._malformed_submissions(env, _Fragile)
    finally:
        env.close()
    assert str(failed.value).startswith(
        "submitting random bytes in the workspace's files: the env crashed: taskgym crashed in "
        "grading: UnicodeDecodeError: 'utf-8' codec can't decode byte")


def test_a_null_score_with_no_verdict_is_not_a_zero_reward(tmp_path: Path,
                                                           answer_task: Any) -> None:
    answer_task(tmp_path / "t")
    env = _NoVerdictForNull(tasks=tmp_path)
    try:
        _, null, problems = checks.oracle_then_null(env, task_id="t")
    finally:
        env.close()
    assert (null.score, null.verdict) == (0.0, "none")
    assert problems == ["null on t: score 0.0, success False, no verdict (grader_crash) (want "
                        "0.0, False, graded): the grader crashed"]
