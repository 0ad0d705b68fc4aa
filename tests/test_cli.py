"""The ``taskgym`` command line, run in-process."""

from __future__ import annotations

import dataclasses
import json

import pytest

from taskgym.cli.main import build_parser, main
from taskgym.evaluation import EpisodeRecord

RECORD_FIELDS = {f.name for f in dataclasses.fields(EpisodeRecord)}


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("coding-terminal-v0"))
    assert line.split(None, 1)[1] == (
        "Solve a programming or ops task in a sandboxed shell; hidden tests decide.")


def test_parser_requires_a_command(capsys):
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    assert "required" in capsys.readouterr().err


def test_parser_rejects_unknown_agent(capsys):
    with pytest.raises(SystemExit):
        main(["run", "coding-terminal-v0", "--agent", "gpt"])
    assert "invalid choice: 'gpt'" in capsys.readouterr().err


def test_parser_defaults():
    args = build_parser().parse_args(["eval", "coding-terminal-v0"])
    assert (args.agent, args.workers, args.sandbox, args.episodes, args.output) == (
        "oracle", 2, "local", None, None)


def test_unknown_env_is_reported_not_raised(capsys):
    assert main(["run", "coding-terminl-v0", "--agent", "null"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("taskgym: no taskgym env 'coding-terminl-v0'. "
                          "Did you mean 'coding-terminal-v0'?")


def test_task_check_on_a_folder_without_tasks(capsys, tmp_path):
    assert main(["task", "check", str(tmp_path)]) == 2
    assert "holds no task folders" in capsys.readouterr().err


def test_scripted_agent_needs_actions():
    with pytest.raises(SystemExit, match="--agent scripted needs --actions FILE"):
        main(["run", "coding-terminal-v0", "--agent", "scripted"])


@pytest.mark.sandbox
def test_doctor(capsys):
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("ok ") and "sandbox: local" in lines[0]
    # "--": an optional part (the docker backend) is missing; fix lines are indented
    assert all(line.startswith(("ok ", "-- ", "    ")) for line in lines)
    assert any("coding: python3 + pytest (system)" in line for line in lines)


@pytest.mark.sandbox
def test_run_oracle(capsys):
    code = main(["run", "coding-terminal-v0", "--agent", "oracle", "--task", "py-fix-memo-leak"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("=== coding-terminal-v0 / task py-fix-memo-leak / agent oracle\n")
    assert "\n>>> step 1: " in out and "\n>>> step 2: " in out and ">>> step 3" not in out
    assert '>>> step 2: {"tool": "submit", "args": {}}\nsubmitted\n' in out
    assert "[graded: score=1.000 success" in out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith("=== score 1.000 (success), 2 steps, ")


@pytest.mark.sandbox
def test_run_scripted_with_actions_file(capsys, tmp_path, answer_task):
    task = answer_task(tmp_path / "tasks" / "answer")
    actions = tmp_path / "actions.json"
    actions.write_text(json.dumps([{"tool": "write_file",
                                    "args": {"path": "answer.txt", "content": "42\n"}}]))
    code = main(["run", "coding-terminal-v0", "--agent", "scripted", "--actions", str(actions),
                 "--tasks", str(task.parent)])
    out = capsys.readouterr().out
    assert code == 0
    assert "wrote 3 bytes to answer.txt" in out
    assert out.rstrip().splitlines()[-1].startswith("=== score 1.000 (success), 2 steps")


@pytest.mark.sandbox
def test_eval_null(capsys, tmp_path):
    output = tmp_path / "tmp.jsonl"
    code = main(["eval", "coding-terminal-v0", "--agent", "null", "--episodes", "2",
                 "--workers", "2", "--output", str(output)])
    out = capsys.readouterr().out
    assert code == 0
    assert "coding-terminal-v0 / agent=null" in out
    table = {line[:24].strip(): line[24:].strip() for line in out.splitlines()
             if line[:1].isalpha()}
    assert table["episodes"] == "2"
    assert table["success rate"] == "0.000"
    assert table["mean score"] == "0.000"
    assert table["mean steps"] == "1.000"
    assert table["crashed episodes"] == "0"
    assert f"every episode: {output}" in out
    lines = output.read_text().splitlines()
    assert len(lines) == 2
    records = [json.loads(line) for line in lines]
    for record in records:
        assert set(record) == RECORD_FIELDS
        assert record["success"] is False
        assert record["score"] == 0.0
        assert record["agent"] == "null"
        assert record["env_id"] == "coding-terminal-v0"
        assert record["steps"] == 1 and record["error"] is None
    assert sorted(r["seed"] for r in records) == [0, 1]


@pytest.mark.sandbox
def test_task_check_valid(capsys, tmp_path, answer_task):
    task = answer_task(tmp_path / "tiny-ok")
    code = main(["task", "check", str(task)])
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "ok   tiny-ok",
        "1 of 1 tasks pass: oracle scores 1 and null scores 0, twice",
    ]
    assert code == 0


@pytest.mark.sandbox
def test_task_check_broken(capsys, tmp_path, answer_task):
    task = answer_task(tmp_path / "tiny-broken", solve="echo 41 > /app/answer.txt\n")
    code = main(["task", "check", str(task)])
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert code == 1
    assert lines[0] == "FAIL tiny-broken"
    want = "oracle on tiny-broken: score 0.0, success False (want 1.0, True): "
    assert lines[1].startswith(f"     run 1: {want}")
    assert lines[2].startswith(f"     run 2: {want}")
    assert "null on" not in out  # the null agent does score 0
    assert lines[-1] == "0 of 1 tasks pass: oracle scores 1 and null scores 0, twice"


@pytest.mark.sandbox
@pytest.mark.slow
def test_env_check_prints_each_check_and_fails_on_a_broken_task(capsys, tmp_path, answer_task):
    answer_task(tmp_path / "a-broken", solve="echo 41 > /app/answer.txt\n")  # picked first
    answer_task(tmp_path / "b-ok")
    code = main(["env", "check", "coding-terminal-v0", "--tasks", str(tmp_path),
                 "--tasks-per-set", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    marks = {line.split()[1]: line.split()[0] for line in lines[:-1] if not line.startswith(" ")}
    assert marks == {
        "gymnasium_check_env": "ok", "tool_schemas": "ok", "fuzz_500_garbage_actions": "ok",
        "truncation_by_step_limit_then_step_after_the_end": "ok",
        "truncation_by_time_limit": "ok", "reset_seed_picks_the_same_task": "ok",
        "close_twice_leaves_nothing": "ok", "oracle_1_null_0": "FAIL",
        "oracle_1_null_0_generated": "ok"}
    failed = next(line for line in lines if line.startswith("FAIL"))
    assert "oracle on a-broken: score 0.0, success False (want 1.0, True)" in failed
    assert lines[-1] == "8 of 9 checks pass for coding-terminal-v0"
