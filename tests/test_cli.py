"""The ``taskgym`` command line, run in-process."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import taskgym
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
    # "--": an optional part (the docker backend, say) is missing; fix lines are indented;
    # the legend that ends the output says what "--" means
    assert all(line.startswith(("ok ", "-- ", "    ", "--: optional")) for line in lines if line)
    assert any("leftovers of dead runs" in line for line in lines)
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
    table = dict((label.strip(), value.strip()) for label, value in
                 (line.rsplit("  ", 1) for line in out.splitlines() if "  " in line))
    assert table["episodes"] == "2"
    assert table["graded episodes"] == "2"
    assert table["success rate (graded)"] == "0.000"
    assert table["mean score (graded)"] == "0.000"
    assert table["mean steps (graded)"] == "1.000"
    assert table["no-verdict rate"] == "0.000"
    assert table["crashed episodes"] == "0"
    assert "no verdict" not in out
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
        assert (record["verdict"], record["failure"]) == ("graded", None)
    assert sorted(r["seed"] for r in records) == [0, 1]


@pytest.mark.sandbox
@pytest.mark.parametrize(("agent", "status"), [("oracle", 3), ("null", 1)])
def test_eval_exit_status_says_when_an_episode_had_no_verdict(capsys, tmp_path, answer_task,
                                                              monkeypatch, agent, status):
    # the grader cannot run here (a missing dependency): each episode has no verdict. The
    # oracle's no-verdict episodes exit 3 (this machine cannot grade the env); any other
    # agent's exit 1; each is listed with its class and reason
    from taskgym.core.reward import FailureClass, RewardResult
    from taskgym.domains.coding import CodingEnv

    monkeypatch.setattr(CodingEnv, "verify", lambda self, task, session: RewardResult.no_verdict(
        FailureClass.GRADER_DEPENDENCY, "pytest is missing: sudo apt-get install python3-pytest"))
    answer_task(tmp_path / "tasks" / "t")
    code = main(["eval", "coding-terminal-v0", "--agent", agent, "--episodes", "1",
                 "--workers", "1", "--tasks", str(tmp_path / "tasks"),
                 "--output", str(tmp_path / "out.jsonl")])
    out = capsys.readouterr().out
    assert code == status
    assert ("episodes with no verdict (the environment failed, not the agent):\n"
            "  t (seed 0) [grader_dependency]: pytest is missing: sudo apt-get install "
            "python3-pytest") in out
    assert "oracle episodes that did not succeed" not in out


def test_eval_help_documents_the_exit_status(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    out = capsys.readouterr().out
    assert "exit status:" in out
    for code in "0123":
        assert f"\n  {code}  " in out


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
    want = "oracle on tiny-broken: score 0.0, success False (want 1.0, True, graded): "
    assert lines[1].startswith(f"     run 1: {want}")
    assert lines[2].startswith(f"     run 2: {want}")
    assert "null on" not in out  # the null agent does score 0
    assert lines[-1] == "0 of 1 tasks pass: oracle scores 1 and null scores 0, twice"


# -- argument checks and clear errors (no sandbox) ---------------------------------------------


def test_version(capsys):
    import taskgym

    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert capsys.readouterr().out == f"taskgym {taskgym.__version__}\n"


@pytest.mark.parametrize("option", ["--episodes", "--workers"])
@pytest.mark.parametrize(("value", "why"), [("0", "0 is less than 1"), ("-2", "-2 is less than 1"),
                                            ("two", "'two' is not an integer")])
def test_eval_counts_must_be_positive(capsys, option, value, why):
    with pytest.raises(SystemExit) as info:
        main(["eval", "coding-terminal-v0", "--agent", "null", option, value])
    assert info.value.code == 2
    assert f"argument {option}: {why}" in capsys.readouterr().err


def test_run_max_steps_must_be_positive(capsys):
    with pytest.raises(SystemExit):
        main(["run", "coding-terminal-v0", "--max-steps", "0"])
    assert "argument --max-steps: 0 is less than 1" in capsys.readouterr().err


def test_eval_output_in_a_missing_folder(capsys, tmp_path):
    output = tmp_path / "no" / "such" / "x.jsonl"
    assert main(["eval", "coding-terminal-v0", "--agent", "null", "--episodes", "1",
                 "--output", str(output)]) == 2
    err = capsys.readouterr().err
    assert err == (f"taskgym: cannot write {output}: the folder {output.parent} does not exist; "
                   f"create it first (mkdir -p {output.parent}) or choose another file\n")
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize(("content", "why"), [
    (None, "cannot read it (No such file or directory)"),
    ("[{'tool': 'bash'}]", "not valid JSON (Expecting property name enclosed in double quotes "
     "at line 1, column 3)"),
    ("", "not valid JSON (Expecting value at line 1, column 1)"),
    ('{"tool": "submit", "args": {}}', "holds a JSON dict, not a list of actions"),
])
def test_scripted_actions_file_problems(capsys, tmp_path, content, why):
    actions = tmp_path / "actions.json"
    if content is not None:
        actions.write_text(content)
    assert main(["run", "coding-terminal-v0", "--agent", "scripted",
                 "--actions", str(actions)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"taskgym: --actions {actions}: {why}")
    assert "Traceback" not in err


def test_scripted_actions_a_folder(capsys, tmp_path):
    assert main(["run", "coding-terminal-v0", "--agent", "scripted",
                 "--actions", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith(
        f"taskgym: --actions {tmp_path}: cannot read it (Is a directory)")


@pytest.mark.parametrize(("argv", "message"), [
    (["--sandbox", "nope"], "no sandbox backend named 'nope' is installed (installed: 'docker', "
                           "'local', 'unisolated')"),
    (["--tasks", "curatd"], "tasks='curatd': not a named task set, and the folder "),
])
def test_bad_env_options_are_reported(capsys, argv, message):
    assert main(["run", "coding-terminal-v0", "--agent", "null", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"taskgym: {message}")
    if "--tasks" in argv:
        assert err.endswith("does not exist. Did you mean 'curated'? Named sets of coding: "
                            "curated, generated, generated:mutation, generated:spec, "
                            "generated:wrangling\n")


def test_unknown_env_without_a_close_match_lists_the_ids(capsys):
    assert main(["run", "nope-v0"]) == 2
    assert capsys.readouterr().err == (
        "taskgym: no taskgym env 'nope-v0'. "
        f"Registered: {', '.join(sorted(taskgym.list_envs()))}\n")


# -- doctor: what is optional, exit status, leftovers --------------------------------------------


def _checks(*checks):
    from taskgym.doctor import Check

    return [Check(*c[:3], fix=c[3], optional=c[4]) for c in checks]


def test_doctor_exit_status_ignores_optional_parts(capsys, monkeypatch):
    import taskgym.doctor

    monkeypatch.setattr(taskgym.doctor, "run_checks", lambda: _checks(
        ("sandbox: local", True, "fine", "", False),
        ("cad: cadquery", False, "not installed", "pip install 'taskgym[cad]'", True)))
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "--  cad: cadquery   not installed"
    assert out[2] == "                    fix: pip install 'taskgym[cad]'"
    assert out[-1].startswith("--: optional, not needed for coding-terminal-v0 on the local "
                              "sandbox")
    assert not any(line.startswith("NO") for line in out)


def test_doctor_exit_status_fails_on_a_required_part(capsys, monkeypatch):
    import taskgym.doctor

    monkeypatch.setattr(taskgym.doctor, "run_checks", lambda: _checks(
        ("sandbox: local", False, "bwrap missing", "sudo apt-get install bubblewrap", False),
        ("cgroups", True, "v2", "", False)))
    assert main(["doctor"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "NO  sandbox: local  bwrap missing"
    assert out[-1] == ("NO: 1 required check(s) failed; taskgym cannot run episodes here "
                       "until they are fixed")


@pytest.mark.sandbox
def test_doctor_without_the_cad_and_pdf_extras(capsys, monkeypatch):
    # what a fresh `./scripts/install.sh` (no extras) sees: optional lines, exit status 0
    import importlib.metadata

    real = importlib.metadata.version

    def version(dist: str) -> str:
        if dist in ("cadquery", "pdfplumber", "pypdfium2", "reportlab", "fpdf2"):
            raise importlib.metadata.PackageNotFoundError(dist)
        return real(dist)

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    cad = next(i for i, line in enumerate(lines) if "cad: cadquery" in line)
    assert lines[cad].startswith("--  ") and lines[cad].endswith(
        "missing cadquery (optional: only cad-cadquery-v0 needs it)")
    assert lines[cad + 1].split() == ["fix:", "pip", "install", "'taskgym[cad]'"]
    pdf = next(i for i, line in enumerate(lines) if "finance: pypdfium2" in line)
    assert lines[pdf].startswith("--  ") and lines[pdf].endswith(
        "missing pypdfium2, pdfplumber, reportlab, fpdf2 (optional: only finance-pdf-v0 needs it)")
    assert lines[pdf + 1].split() == ["fix:", "pip", "install", "'taskgym[pdf]'"]


@pytest.mark.sandbox
def test_doctor_reports_and_reaps_what_a_killed_controller_left(capsys, tmp_path, answer_task):
    import signal
    import subprocess
    import sys

    from taskgym.sandbox import leftovers

    answer_task(tmp_path / "tasks" / "answer")
    script = (
        "import os, signal, taskgym\n"
        f"env = taskgym.make('coding-terminal-v0', tasks={str(tmp_path / 'tasks')!r})\n"
        "env.reset()\n"
        "print(os.getpid(), flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    dead = proc.stdout.strip()
    left = {str(p) for p in leftovers() if p.name.startswith(f"{dead}-")}
    assert left, "a controller killed while its sandbox ran left nothing: nothing to reap"

    assert main(["doctor"]) == 0  # leftovers are reported, not a failure
    lines = capsys.readouterr().out.splitlines()
    line = next(i for i, x in enumerate(lines) if "leftovers of dead runs" in x)
    assert lines[line].startswith("--  ")
    assert lines[line + 1].split()[:3] == ["fix:", "taskgym", "doctor"]
    assert "--reap" in lines[line + 1]

    assert main(["doctor", "--reap"]) == 0
    out = capsys.readouterr().out
    assert {f"reaped {p}" for p in left} <= set(out.splitlines())
    assert not any(Path(p).exists() for p in left)
    assert not [p for p in leftovers() if p.name.startswith(f"{dead}-")]
@pytest.mark.sandbox
@pytest.mark.slow
def test_env_check_prints_each_check_and_fails_on_a_broken_task(capsys, tmp_path, answer_task):
    answer_task(tmp_path / "a-broken", solve="echo 41 > /app/answer.txt\n")  # picked first
    answer_task(tmp_path / "b-ok")
    code = main(["env", "check", "coding-terminal-v0", "--tasks", str(tmp_path),
                 "--tasks-per-set", "1", "--grades", "2"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    marks = {line.split()[1]: line.split()[0] for line in lines[:-1] if not line.startswith(" ")}
    assert marks == {
        "gymnasium_check_env": "ok", "tool_schemas": "ok", "fuzz_500_garbage_actions": "ok",
        "truncation_by_step_limit_then_step_after_the_end": "ok",
        "truncation_by_time_limit": "ok", "reset_seed_picks_the_same_task": "ok",
        "close_twice_leaves_nothing": "ok", "verifier_malformed_submissions_are_graded": "ok",
        "verifier_same_state_same_verdict_2_grades": "ok", "oracle_1_null_0": "FAIL",
        "oracle_1_null_0_generated": "ok"}
    failed = next(line for line in lines if line.startswith("FAIL"))
    assert "oracle on a-broken: score 0.0, success False (want 1.0, True, graded)" in failed
    assert lines[-1] == "10 of 11 checks pass for coding-terminal-v0"
