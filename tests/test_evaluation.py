"""evaluate(), run_episode() and the results summary."""

from __future__ import annotations

import dataclasses
import functools
import json
from typing import Any

import pytest

import taskgym
from taskgym.agents import ScriptedAgent
from taskgym.errors import ConfigError
from taskgym.evaluation import EpisodeRecord, EvalResults, evaluate, run_episode

SUMMARY_KEYS = ["episodes", "graded", "success_rate", "mean_score", "mean_steps",
                "step_success_rate", "no_verdict_rate", "wall_sec", "cpu_sec", "peak_memory_mb",
                "crashed"]


def record(**changes: Any) -> EpisodeRecord:
    base = dict(env_id="e", task_id="t", seed=0, agent="a", score=0.0, success=False, steps=1,
                step_errors=0, wall_sec=1.0, cpu_sec=0.5, peak_memory_bytes=0)
    base.update(changes)
    return EpisodeRecord(**base)  # type: ignore[arg-type]


# -- summary and table (no sandbox) ---------------------------------------------------------


def test_summary_values():
    results = EvalResults("env-v0", "scripted", [
        record(seed=0, score=1.0, success=True, steps=4, step_errors=1, wall_sec=2.0,
               cpu_sec=1.0, peak_memory_bytes=3 * 2**20),
        record(seed=1, score=0.5, steps=6, step_errors=0, wall_sec=1.5, cpu_sec=0.25,
               peak_memory_bytes=2**20),
        record(seed=2, score=0.0, steps=0, error="SandboxError: boom", wall_sec=0.0, cpu_sec=0.0,
               verdict="none", failure="sandbox_start"),
    ])
    summary = results.summary()
    assert list(summary) == SUMMARY_KEYS
    assert summary == pytest.approx({
        "episodes": 3.0, "graded": 2.0, "success_rate": 0.5, "mean_score": 0.75,
        "mean_steps": 5.0, "step_success_rate": 0.9, "no_verdict_rate": 1 / 3, "wall_sec": 3.5,
        "cpu_sec": 1.25, "peak_memory_mb": 3.0, "crashed": 1.0})
    assert results.no_verdict_classes() == {"sandbox_start": 1}


def test_rates_are_over_graded_episodes_and_no_verdict_stands_apart():
    # the new user's case: every grade of the oracle failed for want of pytest. Those zeros
    # are not the agent's: the success rate is over the one graded episode, and the table
    # shows the no-verdict rate with each class under it
    results = EvalResults("env-v0", "oracle", [
        record(seed=0, score=1.0, success=True, steps=3, step_errors=1),
        *(record(seed=s, steps=2, step_errors=2, verdict="none", failure="grader_dependency")
          for s in (1, 2, 3)),
        record(seed=4, steps=1, verdict="none", failure="grader_timeout"),
    ])
    summary = results.summary()
    assert (summary["graded"], summary["success_rate"], summary["mean_score"]) == (1.0, 1.0, 1.0)
    assert summary["step_success_rate"] == pytest.approx(2 / 3)
    assert summary["no_verdict_rate"] == pytest.approx(0.8)
    assert results.no_verdict_classes() == {"grader_dependency": 3, "grader_timeout": 1}
    rows = [line.rsplit("  ", 1) for line in results.table().splitlines()[2:]]
    rows = [(label.rstrip(), value.strip()) for label, value in rows]
    at = rows.index(("no-verdict rate", "0.800"))
    assert rows[at + 1:at + 3] == [("  grader_dependency", "3"), ("  grader_timeout", "1")]
    assert ("success rate (graded)", "1.000") in rows and ("graded episodes", "1") in rows


def test_summary_of_nothing():
    summary = EvalResults("e", "a", []).summary()
    assert summary == {k: 0.0 for k in SUMMARY_KEYS}


def test_table_text():
    results = EvalResults("env-v0", "null", [record(seed=0), record(seed=1, steps=3)])
    lines = results.table().splitlines()
    assert lines[0] == "env-v0 / agent=null"
    assert set(lines[1]) == {"-"}
    rows = dict((label.strip(), value.strip()) for label, value in
                (line.rsplit("  ", 1) for line in lines[2:]))
    assert rows == {"episodes": "2", "graded episodes": "2", "success rate (graded)": "0.000",
                    "mean score (graded)": "0.000", "mean steps (graded)": "2.000",
                    "step success rate (graded)": "1.000", "no-verdict rate": "0.000",
                    "wall time (s, summed)": "2.000", "CPU time (s, sandboxes)": "1.000",
                    "peak memory (MB)": "0.000", "crashed episodes": "0"}
    assert len({len(line) for line in lines[2:]}) == 1  # aligned columns


def test_evaluate_records_crashes(tmp_path):
    # tasks whose task.toml is broken crash at reset (before any sandbox starts): each crash
    # is recorded and the evaluation goes on
    for name in ("broken-a", "broken-b"):
        (tmp_path / "tasks" / name).mkdir(parents=True)
        (tmp_path / "tasks" / name / "instruction.md").write_text("x")
        (tmp_path / "tasks" / name / "task.toml").write_text("[agent\n")
    output = tmp_path / "crash.jsonl"
    results = evaluate("coding-terminal-v0", agent="null", seeds=[4, 1, 3], workers=2,
                       progress=False, output=output, tasks=str(tmp_path / "tasks"))
    assert [r.seed for r in results.records] == [1, 3, 4]
    for r in results.records:
        assert r.error is not None and r.error.startswith("ConfigError: ")
        assert "task.toml" in r.error
        assert r.traceback is not None and "ConfigError" in r.traceback.splitlines()[-1]
        assert (r.task_id, r.steps, r.score, r.agent) == ("?", 0, 0.0, "null")
        assert (r.verdict, r.failure) == ("none", "reference")
    assert results.summary()["crashed"] == 3.0
    assert results.summary()["no_verdict_rate"] == 1.0
    assert len(output.read_text().splitlines()) == 3


def test_evaluate_bad_agent_fails_fast(tmp_path):
    with pytest.raises(ConfigError, match=r"the scripted agent needs actions=\[\.\.\.\]"):
        evaluate("coding-terminal-v0", agent="scripted", episodes=2, progress=False)


# -- with the sandbox -----------------------------------------------------------------------


@pytest.mark.sandbox
def test_evaluate_null(tmp_path, answer_task):
    # three tiny tasks rather than the curated set: same code path, seconds instead of
    # compiling C projects, and independent of the curated tasks being edited
    for name in ("t-c", "t-a", "t-b"):
        answer_task(tmp_path / "tasks" / name)
    output = tmp_path / "tmp.jsonl"
    results = evaluate("coding-terminal-v0", agent="null", episodes=3, workers=2,
                       progress=False, output=output, tasks=str(tmp_path / "tasks"))
    assert (results.env_id, results.agent) == ("coding-terminal-v0", "null")
    assert [r.seed for r in results.records] == [0, 1, 2]
    assert [r.task_id for r in results.records] == ["t-a", "t-b", "t-c"]
    assert all(r.components["pass_fraction"] == 0.0 for r in results.records)
    for r in results.records:
        assert (r.env_id, r.agent, r.score, r.success, r.steps, r.step_errors, r.error) == (
            "coding-terminal-v0", "null", 0.0, False, 1, 0, None)
        assert r.wall_sec > 0
    summary = results.summary()
    assert list(summary) == SUMMARY_KEYS
    assert summary["episodes"] == 3.0
    assert summary["success_rate"] == 0.0 and summary["mean_score"] == 0.0
    assert summary["mean_steps"] == 1.0 and summary["step_success_rate"] == 1.0
    assert summary["crashed"] == 0.0
    assert summary["wall_sec"] == pytest.approx(sum(r.wall_sec for r in results.records))
    assert summary["cpu_sec"] > 0.0 and summary["peak_memory_mb"] > 0.0
    lines = [json.loads(x) for x in output.read_text().splitlines()]
    assert sorted(line["seed"] for line in lines) == [0, 1, 2]
    assert all(set(line) == {f.name for f in dataclasses.fields(EpisodeRecord)}
               for line in lines)
    table = results.table()
    assert table.startswith("coding-terminal-v0 / agent=null\n")
    assert "success rate" in table and "0.000" in table


@pytest.mark.sandbox
def test_run_episode_counts_step_errors(tmp_path, answer_task):
    answer_task(tmp_path / "answer")
    actions = [
        "{not json",                                           # error: bad JSON
        {"tool": "bsh", "args": {"command": "ls"}},             # error: unknown tool
        {"tool": "bash", "args": {"command": "echo 42 > answer.txt"}},
        {"tool": "bash", "args": {"command": "ls", "cwd": "/"}},  # error: extra argument
        {"tool": "read_file", "args": {"path": "../etc/passwd"}},  # error: tool refuses
    ]
    seen: list[tuple[Any, str, dict[str, Any]]] = []
    env = taskgym.make("coding-terminal-v0", tasks=str(tmp_path))
    try:
        record = run_episode(env, ScriptedAgent(actions), task_id="answer",
                             on_step=lambda a, o, i: seen.append((a, o["text"], i)))
    finally:
        env.close()
    assert (record.steps, record.step_errors) == (6, 4)
    assert (record.score, record.success) == (1.0, True)
    assert (record.task_id, record.agent, record.env_id) == ("answer", "scripted",
                                                             "coding-terminal-v0")
    assert record.components["tests_passed"] == 1.0
    assert record.reason is None and record.error is None
    assert record.cpu_sec > 0 and record.peak_memory_bytes > 0
    assert [a for a, _, _ in seen] == [*actions, {"tool": "submit", "args": {}}]
    assert [("error" in i) for _, _, i in seen] == [True, True, False, True, True, False]
    assert seen[0][1].startswith("error: the action is not valid JSON")
    assert seen[1][1].startswith("error: unknown tool 'bsh'. Did you mean 'bash'?")
    assert seen[2][1] == "[exit code 0]"
    assert seen[3][1] == "error: invalid arguments for bash: cwd: Extra inputs are not permitted"
    assert "contains '..'" in seen[4][1]
    assert seen[5][2]["reward"].score == 1.0


# -- argument checks (no sandbox) -----------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"episodes": 0}, "episodes=0: give at least 1"),
    ({"episodes": -2}, "episodes=-2: give at least 1"),
    ({"workers": 0}, "workers=0: give at least 1"),
    ({"workers": -3}, "workers=-3: give at least 1"),
])
def test_evaluate_refuses_counts_below_one(kwargs, message):
    with pytest.raises(ConfigError, match=f"^{message}"):
        evaluate("coding-terminal-v0", agent="null", progress=False, **kwargs)


def test_evaluate_output_in_a_missing_folder(tmp_path):
    output = tmp_path / "missing" / "x.jsonl"
    with pytest.raises(ConfigError) as info:
        evaluate("coding-terminal-v0", agent="null", episodes=1, progress=False, output=output)
    assert str(info.value) == (
        f"cannot write {output}: the folder {output.parent} does not exist; create it first "
        f"(mkdir -p {output.parent}) or choose another file")


def test_evaluate_output_not_writable(tmp_path):
    with pytest.raises(ConfigError, match=r"^cannot write .*: Is a directory; choose another"):
        evaluate("coding-terminal-v0", agent="null", episodes=1, progress=False, output=tmp_path)


def test_progress_bar_success_count_is_never_behind(tmp_path, capsys, monkeypatch):
    # every frame the bar draws shows the success count of the episodes it counts: "n/4"
    # with "success=k/g" over the g graded ones and "no_verdict=n-g" (crashed episodes have
    # no verdict: k and g are 0). mininterval=0, miniters=1: every update
    # is drawn (evaluate imports tqdm.tqdm when it runs)
    import tqdm

    monkeypatch.setattr(tqdm, "tqdm", functools.partial(tqdm.tqdm, mininterval=0, miniters=1))
    for name in ("broken-a", "broken-b"):
        (tmp_path / "tasks" / name).mkdir(parents=True)
        (tmp_path / "tasks" / name / "instruction.md").write_text("x")
        (tmp_path / "tasks" / name / "task.toml").write_text("[agent\n")
    evaluate("coding-terminal-v0", agent="null", seeds=[0, 1, 2, 3], workers=2,
             tasks=str(tmp_path / "tasks"))
    frames = [f for f in capsys.readouterr().err.split("\r") if "ep" in f]
    counted = []
    for frame in frames:
        done = int(frame.split("|")[2].split("/")[0])
        shown = frame.split("no_verdict=")[1].rstrip("] \n") if "success=" in frame else None
        assert shown == (f"{done}, success=0/0" if done else None), frame
        counted.append(done)
    assert counted[-1] == 4 and set(counted) == {0, 1, 2, 3, 4}
@pytest.mark.sandbox
def test_evaluate_records_a_crash_inside_an_episode(tmp_path, answer_task, monkeypatch):
    # a verifier with a bug: step() ends each episode ungraded with info["crash"] and the
    # evaluation records it per episode, traceback included, then goes on
    from taskgym.domains.coding import CodingEnv

    def buggy_verify(self: Any, task: Any, session: Any) -> Any:
        raise ZeroDivisionError("division by zero in the verifier")

    monkeypatch.setattr(CodingEnv, "verify", buggy_verify)
    for name in ("t-a", "t-b"):
        answer_task(tmp_path / "tasks" / name)
    output = tmp_path / "crash.jsonl"
    results = evaluate("coding-terminal-v0", agent="oracle", episodes=2, progress=False,
                       output=output, tasks=str(tmp_path / "tasks"))
    assert results.summary()["crashed"] == 2.0
    lines = [json.loads(x) for x in output.read_text().splitlines()]
    for r in [*results.records, *(EpisodeRecord(**line) for line in lines)]:
        assert r.error == "ZeroDivisionError in grading: division by zero in the verifier"
        assert r.traceback is not None and "buggy_verify" in r.traceback
        assert (r.score, r.success, r.steps) == (0.0, False, 2)
        assert r.task_id in ("t-a", "t-b")
        assert (r.verdict, r.failure) == ("none", "taskgym_crash")


@pytest.mark.sandbox
def test_evaluate_counts_no_verdict_episodes_apart(tmp_path, answer_task, monkeypatch):
    # a verifier that cannot grade one task (its grader dependency is missing): that episode
    # has no verdict, in the record, the JSONL line and the summary; the rates are the
    # graded episodes'
    from taskgym.core.reward import FailureClass, RewardResult
    from taskgym.domains.coding import CodingEnv

    verify = CodingEnv.verify

    def half_verify(self: Any, task: Any, session: Any) -> Any:
        if task.id == "t-b":
            return RewardResult.no_verdict(FailureClass.GRADER_DEPENDENCY,
                                           "No module named '_pytest': install python3-pytest")
        return verify(self, task, session)

    monkeypatch.setattr(CodingEnv, "verify", half_verify)
    for name in ("t-a", "t-b"):
        answer_task(tmp_path / "tasks" / name)
    output = tmp_path / "eval.jsonl"
    results = evaluate("coding-terminal-v0", agent="oracle", episodes=2, progress=False,
                       output=output, tasks=str(tmp_path / "tasks"))
    by_task = {r.task_id: r for r in results.records}
    assert (by_task["t-a"].verdict, by_task["t-a"].failure, by_task["t-a"].success) == (
        "graded", None, True)
    assert (by_task["t-b"].verdict, by_task["t-b"].failure, by_task["t-b"].score) == (
        "none", "grader_dependency", 0.0)
    assert by_task["t-b"].reason == "No module named '_pytest': install python3-pytest"
    assert by_task["t-b"].error is None
    summary = results.summary()
    assert (summary["success_rate"], summary["no_verdict_rate"], summary["crashed"]) == (
        1.0, 0.5, 0.0)
    lines = {line["task_id"]: line for line in map(json.loads, output.read_text().splitlines())}
    assert (lines["t-b"]["verdict"], lines["t-b"]["failure"]) == ("none", "grader_dependency")
    assert (lines["t-a"]["verdict"], lines["t-a"]["failure"]) == ("graded", None)
