"""Harbor and Terminal-Bench 1 task folders (fixtures/harbor, fixtures/terminal-bench-1) load and
play as those harnesses run them: the oracle scores 1 and a null agent 0 on each loadable one."""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.agents import NullAgent, OracleAgent
from taskgym.core.task import FolderTaskSet, load_task
from taskgym.domains.coding.verifier import grader_mode
from taskgym.errors import ConfigError
from taskgym.evaluation import EpisodeRecord, run_episode
from taskgym.sandbox.docker.images import base_images

pytestmark = pytest.mark.sandbox

FIXTURES = Path(__file__).parents[3] / "fixtures"
HARBOR = FIXTURES / "harbor"
TB1 = FIXTURES / "terminal-bench-1"
DOCKER_ONLY = {"own-dockerfile"}  # their answer is in the image the Dockerfile builds
NO_ORACLE = {"no-solution"}
PLAYABLE = [(HARBOR, name) for name in sorted(p.name for p in HARBOR.iterdir())
            if name not in DOCKER_ONLY | NO_ORACLE] + \
           [(TB1, name) for name in sorted(p.name for p in TB1.iterdir())
            if name not in DOCKER_ONLY]


@pytest.fixture(scope="module")
def harbor() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("coding-terminal-v0", tasks=str(HARBOR))
    yield env
    env.close()


@pytest.fixture(scope="module")
def tb1() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("coding-terminal-v0", tasks=str(TB1))
    yield env
    env.close()


def test_there_are_a_dozen_fixtures() -> None:
    assert len(list(HARBOR.iterdir())) + len(list(TB1.iterdir())) >= 12
    assert len(PLAYABLE) >= 8


@pytest.mark.parametrize(("root", "name"), PLAYABLE, ids=[n for _, n in PLAYABLE])
def test_oracle_scores_one_and_null_zero(harbor: gym.Env[Any, Any], tb1: gym.Env[Any, Any],
                                        root: Path, name: str,
                                        oracle_then_null: Callable[..., EpisodeRecord]) -> None:
    oracle_then_null(harbor if root == HARBOR else tb1, task_id=name)


def test_the_solution_folder_is_uploaded_beside_solve_sh(harbor: gym.Env[Any, Any]) -> None:
    actions = harbor.unwrapped.oracle_actions(harbor.unwrapped.task_set.get("solution-beside"))
    assert "/solution/solve.sh" in actions[-2]["args"]["command"]
    assert "wordcount.py" not in "".join(a["args"].get("command", "") for a in actions)  # packed
    run_episode(harbor, NullAgent(), task_id="solution-beside")
    # the folder exists, empty, in every episode: nothing of the solution leaks to an agent
    obs, _ = harbor.reset(options={"task_id": "solution-beside"})
    obs, *_ = harbor.step({"tool": "bash", "args": {"command": "ls -A /solution | wc -l"}})
    assert obs["text"].startswith("0\n")


def test_a_big_solution_travels_in_several_commands(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    shutil.copytree(HARBOR / "solution-beside", folder)
    (folder / "solution" / "data" / "noise.bin").write_bytes(
        random.Random(0).randbytes(3 << 20))  # 3 MiB that do not compress
    env = taskgym.make("coding-terminal-v0", tasks=str(folder))
    try:
        actions = env.unwrapped.oracle_actions(env.unwrapped.task_set.get("big"))
        assert len(actions) >= 3  # several upload chunks, then submit
        assert run_episode(env, OracleAgent(env)).score == 1.0
    finally:
        env.close()


def test_test_sh_decides_by_default_and_pytest_is_an_option(tmp_path: Path) -> None:
    task = load_task(HARBOR / "test-sh-decides", "coding")
    assert grader_mode(task) == "script"
    folder = shutil.copytree(HARBOR / "test-sh-decides", tmp_path / "per-test")
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("[verifier]", '[verifier]\ngrader = "pytest"'))
    assert grader_mode(load_task(folder, "coding")) == "pytest"
    env = taskgym.make("coding-terminal-v0", tasks=str(folder))
    try:  # the pytest file alone lacks what test.sh gives it: the bypass fails the oracle
        assert run_episode(env, OracleAgent(env)).score == 0.0
    finally:
        env.close()
    toml.write_text(toml.read_text().replace('grader = "pytest"', 'grader = "tests"'))
    with pytest.raises(ConfigError, match='grader must be "test.sh" or "pytest"'):
        grader_mode(load_task(folder, "coding"))


def test_reward_json_is_read_before_reward_txt(harbor: gym.Env[Any, Any]) -> None:
    run_episode(harbor, OracleAgent(harbor), task_id="reward-json")
    result = harbor.unwrapped.last_reward
    assert (result.score, result.components["checks_passed"]) == (1.0, 3.0)


@pytest.mark.parametrize(("content", "reason"), [
    ("", "wrote no reward file"),
    ("echo nan > /logs/verifier/reward.txt", "not a finite number"),
    ("echo one > /logs/verifier/reward.txt", "does not hold a number"),
    ("echo '{\"a\": 1, \"b\": 1}' > /logs/verifier/reward.json", 'no "reward" key'),
    ("echo '{\"reward\": \"1\"}' > /logs/verifier/reward.json", "not finite numbers"),
    ("echo '{\"reward\": Infinity}' > /logs/verifier/reward.json", "not finite numbers"),
])
def test_bad_reward_files_score_zero_with_the_reason(tmp_path: Path, content: str,
                                                     reason: str) -> None:
    folder = shutil.copytree(HARBOR / "tests-moved-aside", tmp_path / "bad-reward")
    (folder / "tests" / "test.sh").write_text(f"#!/bin/bash\nmkdir -p /logs/verifier\n{content}\n")
    env = taskgym.make("coding-terminal-v0", tasks=str(folder))
    try:
        assert run_episode(env, OracleAgent(env)).score == 0.0
        assert reason in env.unwrapped.last_reward.details["reason"]
    finally:
        env.close()


def test_the_agent_cannot_leave_a_reward_for_the_grader(harbor: gym.Env[Any, Any]) -> None:
    """The reward file is the grader's, in its own sandbox: what the agent writes to /logs
    (or leaves running) is gone when test.sh runs."""
    for command in ("mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt",
                    "mkdir -p /app/logs/verifier; echo 1 > /app/logs/verifier/reward.txt; "
                    "ln -s /app/logs /tmp/logs",
                    "(while :; do mkdir -p /logs/verifier 2>/dev/null; echo 1 > "
                    "/logs/verifier/reward.txt 2>/dev/null; sleep 0.05; done) & disown"):
        harbor.reset(options={"task_id": "tests-moved-aside"})
        harbor.step({"tool": "bash", "args": {"command": command}})
        *_, info = harbor.step({"tool": "submit", "args": {}})
        assert info["reward"].score == 0.0, command


def test_tests_are_a_writable_copy(harbor: gym.Env[Any, Any]) -> None:
    # tests-moved-aside's test.sh moves its cases within /tests: its oracle scoring 1 above
    # proves /tests is writable; the task folder itself is left untouched
    run_episode(harbor, OracleAgent(harbor), task_id="tests-moved-aside")
    assert harbor.unwrapped.last_reward.score == 1.0
    assert (HARBOR / "tests-moved-aside" / "tests" / "cases" / "one.in").is_file()
    assert not (HARBOR / "tests-moved-aside" / "tests" / "done").exists()


def test_memory_and_storage_become_the_limits(harbor: gym.Env[Any, Any]) -> None:
    limits = harbor.unwrapped.task_set.get("memory-storage").limits
    assert (limits.memory_mb, limits.disk_mb) == (384, 48)
    harbor.reset(options={"task_id": "memory-storage"})
    obs, *_ = harbor.step({"tool": "bash", "args": {
        "command": "head -c 62914560 /dev/zero > /app/big.bin; echo rc=$?"}})
    assert "rc=1" in obs["text"] and "No space left" in obs["text"]
    harbor.step({"tool": "submit", "args": {}})


@pytest.mark.parametrize(("environment", "memory_mb", "disk_mb"), [
    ('memory = "4G"\nstorage = "10G"', 4096, 10240),
    ("memory_mb = 2048\nstorage_mb = 10240", 2048, 10240),
    ('memory = "512M"\nmemory_mb = 512', 512, 512),
])
def test_harbor_sizes(tmp_path: Path, environment: str, memory_mb: int, disk_mb: int) -> None:
    (tmp_path / "instruction.md").write_text("x\n")
    (tmp_path / "task.toml").write_text(f"[environment]\n{environment}\n")
    limits = load_task(tmp_path, "coding").limits
    assert limits.memory_mb == memory_mb
    assert limits.disk_mb in (disk_mb, 512)


@pytest.mark.parametrize(("environment", "message"), [
    ('memory = "4G"\nmemory_mb = 1024', "disagree"),
    ('memory = "lots"', 'is not a size like "512M"'),
    ("memory_mb = -5", "positive number of megabytes"),
])
def test_bad_harbor_sizes_are_refused(tmp_path: Path, environment: str, message: str) -> None:
    (tmp_path / "instruction.md").write_text("x\n")
    (tmp_path / "task.toml").write_text(f"[environment]\n{environment}\n")
    with pytest.raises(ConfigError, match=message):
        load_task(tmp_path, "coding")


def play(env: gym.Env[Any, Any], *commands: str) -> list[tuple[str, float, bool, bool]]:
    """Run bash ``commands`` (``"submit"`` submits); each step's text, reward and ends."""
    seen = []
    for command in commands:
        action = ({"tool": "submit", "args": {}} if command == "submit"
                  else {"tool": "bash", "args": {"command": command}})
        obs, reward, terminated, truncated, _info = env.step(action)
        seen.append((obs["text"], float(reward), terminated, truncated))
    return seen


def test_multi_step_instructions_come_in_turn_never_the_placeholder(
        harbor: gym.Env[Any, Any]) -> None:
    obs, info = harbor.reset(options={"task_id": "multi-step"})
    assert obs["text"] == (HARBOR / "multi-step/steps/create/instruction.md").read_text()
    assert info["step_name"] == "create"
    first, second, third = play(harbor, "echo one > list.txt", "submit", "cat suffix.txt")
    assert "step 'create' graded: score=1.000" in second[0] and not second[2]
    assert "# next step: extend" in second[0] and "suffix.txt" in second[0]
    assert third[0].startswith("two\n")  # steps/extend/workdir/setup.sh ran before the step
    (text, reward, terminated, _), = play(harbor, "submit")
    assert terminated and reward == 0.5  # mean of the two steps: the second was not done
    assert harbor.unwrapped.last_reward.components == {
        "step_create": 1.0, "step_extend": 0.0, "steps_graded": 2.0}


def test_multi_step_min_reward_ends_the_episode(harbor: gym.Env[Any, Any]) -> None:
    harbor.reset(options={"task_id": "multi-step"})
    (text, reward, terminated, _), = play(harbor, "submit")
    assert terminated and reward == 0.0
    assert "below its min_reward 1.0" in text


def test_multi_step_steps_never_reached_score_zero(tmp_path: Path) -> None:
    folder = shutil.copytree(HARBOR / "multi-step", tmp_path / "short")
    env = taskgym.make("coding-terminal-v0", tasks=str(folder), max_steps=2)
    try:  # the step limit falls on the first submit: step 2 is graded as it stands
        env.reset()
        *_, (text, reward, terminated, truncated) = play(env, "echo one > list.txt", "submit")
        assert truncated and reward == 0.5
    finally:
        env.close()


def test_multi_step_final_strategy_and_shared_tests(tmp_path: Path) -> None:
    folder = shutil.copytree(HARBOR / "multi-step", tmp_path / "final")
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace('"mean"', '"final"').replace("min_reward = 1.0", ""))
    shutil.rmtree(folder / "steps" / "create" / "tests")  # graded by the shared tests/test.sh
    (folder / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n[ -s /app/list.txt ] && echo 1 > "
        "/logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    env = taskgym.make("coding-terminal-v0", tasks=str(folder))
    try:
        check_oracle = run_episode(env, OracleAgent(env))
        assert check_oracle.score == 1.0
        env.reset()
        seen = play(env, "echo one > list.txt", "submit", "echo wrong >> list.txt", "submit")
        assert "step 'create' graded: score=1.000" in seen[1][0]
        assert seen[-1][1] == 0.0  # final: the last step's reward alone
    finally:
        env.close()


def test_a_multi_step_task_without_top_level_instruction_loads(tmp_path: Path) -> None:
    folder = shutil.copytree(HARBOR / "multi-step", tmp_path / "set" / "steps-only")
    (folder / "instruction.md").unlink()
    shutil.copytree(HARBOR / "reward-json", tmp_path / "set" / "reward-json")
    task_set = FolderTaskSet(tmp_path / "set", "coding")
    assert task_set.ids() == ["reward-json", "steps-only"]
    assert task_set.get("steps-only").steps == ("create", "extend")


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: (f / "steps/extend/instruction.md").unlink(), "no steps/extend/instruction.md"),
    (lambda f: (f / "task.toml").write_text('[[steps]]\nname = "../create"\n'),
     "is not one folder name"),
    (lambda f: (f / "task.toml").write_text('multi_step_reward_strategy = "max"\n[[steps]]\n'
                                           'name = "create"\n'), "must be \"mean\" or"),
    (lambda f: (f / "task.toml").write_text('[[steps]]\nname = "create"\nmin_reward = "all"\n'),
     "min_reward must be a number"),
    (lambda f: [p.unlink() for p in f.glob("**/test.sh")], "has no test script"),
])
def test_bad_multi_step_tasks_are_refused(tmp_path: Path, change: Callable[[Path], Any],
                                          message: str) -> None:
    folder = shutil.copytree(HARBOR / "multi-step", tmp_path / "bad")
    change(folder)
    with pytest.raises(ConfigError, match=message):
        load_task(folder, "coding")


def test_a_task_without_solve_sh_gives_a_clear_oracle_error(harbor: gym.Env[Any, Any]) -> None:
    with pytest.raises(ConfigError, match="has no solution/solve.sh, so the oracle cannot"):
        harbor.unwrapped.oracle_actions(harbor.unwrapped.task_set.get("no-solution"))
    assert run_episode(harbor, NullAgent(), task_id="no-solution").score == 0.0


def test_terminal_bench_1_fields() -> None:
    task = load_task(TB1 / "csv-column-sum", "coding")
    assert task.layout == "terminal-bench-1"
    assert task.instruction.startswith("Write an executable `/app/colsum`")
    assert (task.limits.timeout_sec, task.limits.verifier_timeout_sec) == (300.0, 120.0)
    assert task.tags == ("csv", "fixture")
    legacy = load_task(TB1 / "legacy-descriptions", "coding")
    assert legacy.instruction.startswith("Make `/app/greet.sh`")


@pytest.mark.parametrize(("change", "message"), [
    (lambda f: (f / "task.yaml").write_text((f / "task.yaml").read_text()
                                            .replace("false", "true")), "run_tests_in_same_shell"),
    (lambda f: (f / "run-tests.sh").unlink(), "without run-tests.sh"),
    (lambda f: (f / "task.yaml").write_text("difficulty: easy\n"), "has no instruction"),
    (lambda f: (f / "task.yaml").write_text("instruction: [unclosed\n"), "task.yaml"),
])
def test_bad_terminal_bench_1_folders_are_refused(tmp_path: Path, change: Callable[[Path], Any],
                                                  message: str) -> None:
    folder = shutil.copytree(TB1 / "csv-column-sum", tmp_path / "tb1")
    change(folder)
    with pytest.raises(ConfigError, match=message):
        load_task(folder, "coding")


def test_a_refused_folder_is_listed_not_skipped_silently(tmp_path: Path) -> None:
    folder = shutil.copytree(TB1 / "csv-column-sum", tmp_path / "set" / "same-shell")
    (folder / "task.yaml").write_text((folder / "task.yaml").read_text().replace(
        "run_tests_in_same_shell: false", "run_tests_in_same_shell: true"))
    shutil.copytree(TB1 / "legacy-descriptions", tmp_path / "set" / "legacy")
    (tmp_path / "set" / "stray").mkdir()
    (tmp_path / "set" / "stray" / "task.toml").write_text("version = \"1.0\"\n")
    task_set = FolderTaskSet(tmp_path / "set", "coding")
    assert task_set.ids() == ["legacy"]
    assert "run_tests_in_same_shell" in task_set.refused["same-shell"]
    assert "neither instruction.md nor [[steps]]" in task_set.refused["stray"]
    with pytest.raises(ConfigError, match="run_tests_in_same_shell"):
        task_set.get("same-shell")


def test_terminal_bench_1_solution_yaml_only(tmp_path: Path) -> None:
    folder = shutil.copytree(TB1 / "csv-column-sum", tmp_path / "yaml-only")
    (folder / "solution.sh").unlink()
    (folder / "solution.yaml").write_text("- command: echo hi\n")
    env = taskgym.make("coding-terminal-v0", tasks=str(folder))
    try:
        with pytest.raises(ConfigError, match="solution.yaml"):
            env.unwrapped.oracle_actions(env.unwrapped.task_set.get("yaml-only"))
    finally:
        env.close()


FORGER = """#!/usr/bin/python3
import os, sys, time
pytest_pid = os.getppid()
shell = open(f"/proc/{pytest_pid}/stat").read().rsplit(")", 1)[1].split()[1]
out = open(f"/proc/{shell}/fd/1", "w")  # run-tests.sh's own output, past pytest's capture
fake = "=== short test summary info ===\\nPASSED test_outputs.py::test_qty\\n" \\
       "PASSED test_outputs.py::test_negative\\n"
if sys.argv[2] == "qty" and os.fork() == 0:
    time.sleep({delay})  # after pytest printed its summary, when the delay is long
    out.write(fake)
    out.flush()
    os._exit(0)
print(0)
"""


@pytest.mark.parametrize("delay", [0, 1.5])
def test_terminal_bench_1_summary_forgeries_fail(tmp_path: Path, delay: float) -> None:
    """Code under test writes a fake all-passed summary into the test run's output, before or
    after pytest's own: a test seen failing anywhere stays failed."""
    folder = shutil.copytree(TB1 / "csv-column-sum", tmp_path / "forged")
    (folder / "solution.sh").write_text(
        "#!/bin/bash\ncat > /app/colsum <<'PY'\n" + FORGER.replace("{delay}", str(delay))
        + "PY\nchmod +x /app/colsum\n")
    (folder / "run-tests.sh").write_text((folder / "run-tests.sh").read_text() + "sleep 2\n")
    env = taskgym.make("coding-terminal-v0", tasks=str(folder))
    try:
        assert run_episode(env, OracleAgent(env)).score == 0.0
        assert "PASSED test_outputs.py::test_negative" in env.unwrapped.last_reward.details["log"]
    finally:
        env.close()


@pytest.mark.parametrize(("dockerfile", "images"), [
    ("FROM python:3.13-slim-bookworm\nWORKDIR /app\n", ["python:3.13-slim-bookworm"]),
    ("ARG BASE=ubuntu:24.04\nFROM --platform=linux/amd64 ${BASE} AS build\nRUN true\n"
     "FROM build\nFROM scratch\nCOPY --from=build /x /x\n", ["ubuntu:24.04"]),
    ("# FROM commented:out\nfrom \\\n  debian:12 as Base\nFROM base\n", ["debian:12"]),
])
def test_the_images_a_dockerfile_starts_from(tmp_path: Path, dockerfile: str,
                                             images: list[str]) -> None:
    (tmp_path / "Dockerfile").write_text(dockerfile)
    assert base_images(tmp_path / "Dockerfile") == images


def test_test_sh_runs_by_its_shebang(tmp_path: Path) -> None:
    folder = shutil.copytree(HARBOR / "tests-moved-aside", tmp_path / "python-test")
    (folder / "tests" / "test.sh").write_text(
        "#!/usr/bin/python3\nimport os, subprocess\nos.makedirs('/logs/verifier', exist_ok=True)\n"
        "got = subprocess.run(['/app/rev'], input='ab\\n', capture_output=True, text=True).stdout\n"
        "open('/logs/verifier/reward.txt', 'w').write('1' if got == 'ba\\n' else '0')\n")
    env = taskgym.make("coding-terminal-v0", tasks=str(folder))
    try:
        assert run_episode(env, OracleAgent(env)).score == 1.0
        assert run_episode(env, NullAgent()).score == 0.0
    finally:
        env.close()


@pytest.mark.hacks
@pytest.mark.parametrize("sandbox", [pytest.param("local", marks=pytest.mark.sandbox),
                                     pytest.param("docker", marks=pytest.mark.docker)])
@pytest.mark.parametrize("subversion", [
    "bash() { return 0; }",                                        # a function shadows bash
    "shopt -s expand_aliases; alias bash=true",                    # an alias does
    "/bin/bash() { :; }; bash() { :; }; command() { :; }",         # and the paths it may take
    "shopt -s extdebug; trap 'false' DEBUG",                       # skips every later command
    "(while :; do rm -f /app/suffix.txt; sleep 0.01; done) >/dev/null 2>&1 &",  # undoes it
])
def test_a_steps_setup_runs_whatever_the_agent_left_in_its_shell(
        tmp_path: Path, sandbox: str, subversion: str) -> None:
    """A later step's setup.sh runs apart from the agent's shell (functions, aliases, traps and
    background processes cannot skip it or undo it); the agent's variables and cwd are kept."""
    folder = shutil.copytree(HARBOR / "multi-step", tmp_path / "multi-step")
    with (folder / "task.toml").open("a") as toml:  # the trap hangs its own command until then
        toml.write("\n[agent]\ncommand_timeout_sec = 10\n")
    env = taskgym.make("coding-terminal-v0", tasks=str(folder), sandbox=sandbox)
    try:
        env.reset()
        play(env, "echo one > list.txt; mkdir -p sub; cd sub; KEEP=kept")
        play(env, subversion)
        (text, _reward, terminated, _), = play(env, "submit")
        assert "# next step: extend" in text and not terminated
        session = env.unwrapped.session
        time.sleep(0.1)  # a watcher left running would have removed it by now
        assert session.read_file("suffix.txt") == b"two\n"
        if "trap" not in subversion:  # the trap, sourced back, would skip this command too
            (shown, *_), = play(env, "echo $KEEP $PWD")
            assert shown.startswith("kept /app/sub")
    finally:
        env.close()
