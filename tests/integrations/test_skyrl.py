"""taskgym's SkyRL text env against the real skyrl-gym 0.4 package, driven as SkyRL's generator
drives it: ``skyrl_gym.make`` on one thread, ``init``/``step``/``close`` on a 32-thread pool,
scripted replies. Rewards are the verifier's, construction starts no sandbox, nothing is left
after ``close``, a malformed call is an error observation, and a hack scores 0."""

from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.errors import ConfigError
from taskgym.sandbox import Backend

try:  # the main run collects this module without skyrl-gym and deselects its tests
    import skyrl_gym

    from taskgym.integrations import skyrl as adapter
    MISSING = None
except ImportError as exc:
    skyrl_gym = adapter = None
    MISSING = exc

sys.path.insert(0, str(Path(__file__).parent))

from trainer_kit import hermes_call, leftovers  # noqa: E402

pytestmark = [pytest.mark.trainers, pytest.mark.sandbox]


@pytest.fixture(autouse=True)
def needs_skyrl_gym() -> None:
    if MISSING is not None:
        pytest.fail(f"the SkyRL tests need skyrl-gym==0.4.0 ({MISSING}); run "
                    "scripts/test_integrations.sh")

EPISODES = 32


def wait_for_nothing_left(before: dict[str, list[str]]) -> dict[str, list[str]]:
    deadline = time.monotonic() + 10
    while True:
        now = {k: sorted(set(v) - set(before[k])) for k, v in leftovers().items()}
        if not any(now.values()) or time.monotonic() > deadline:
            return now
        time.sleep(0.1)


def episode(env: Any, replies: list[str]) -> dict[str, Any]:
    """What SkyRL's agent loop does with one env: init, step until done, metrics, close; and
    the verifier's own result, read from the env before it is closed."""
    prompt = [{"role": "user", "content": "Solve the task."}]
    messages, _ = env.init(prompt)
    outputs = []
    for reply in replies:
        out = env.step(reply)
        outputs.append(out)
        if out["done"]:
            break
    metrics = env.get_metrics()
    verified = env.env.unwrapped.last_reward
    env.close()
    return {"messages": messages, "outputs": outputs, "metrics": metrics, "verified": verified}


@pytest.fixture()
def task(answer_task: Any, tmp_path: Path) -> Path:
    found: Path = answer_task(tmp_path / "answer")
    return found


def make(task: Path, **extras: Any) -> Any:
    return skyrl_gym.make("taskgym", env_config={"make_kwargs": {"tasks": str(task)}},
                          extras={"env_id": "coding-terminal-v0", "max_turns": 4, **extras})


def test_32_envs_on_skyrls_thread_pattern_give_the_verified_rewards(
        task: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from taskgym.core.env import TaskEnv

    resets: list[int] = []
    real_reset = TaskEnv.reset

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        resets.append(1)
        return real_reset(self, *args, **kwargs)

    monkeypatch.setattr(TaskEnv, "reset", counted)
    before = leftovers()
    made = [make(task, row=i) for i in range(EPISODES)]  # one thread, as SkyRL's event loop
    assert resets == [] and leftovers() == before  # construction started nothing
    assert all(env.env is None for env in made)

    def play(i: int) -> dict[str, Any]:
        answer = "42" if i % 2 == 0 else "41"
        return episode(made[i], [
            hermes_call("bash", {"command": f"echo {answer} > /app/answer.txt"}),
            "I am done." + hermes_call("submit", {}) + hermes_call("bash", {"command": "echo late"})])

    with ThreadPoolExecutor(max_workers=32, thread_name_prefix="skyrl-gym-env-") as pool:
        results = list(pool.map(play, range(EPISODES)))
    assert len(resets) == EPISODES
    for i, result in enumerate(results):
        first, last = result["outputs"]
        expected = 1.0 if i % 2 == 0 else 0.0
        assert (first["done"], first["reward"], last["done"]) == (False, 0.0, True)
        assert result["verified"].graded and result["verified"].score == expected
        assert last["reward"] == expected, (i, last)
        assert last["metadata"]["verdict"] == "graded" and last["metadata"]["end"] == "env"
        assert result["metrics"]["reward"] == expected and result["metrics"]["graded"] == 1.0
        assert result["metrics"]["no_verdict"] == 0.0 and result["metrics"]["tool_calls"] == 3
        assert adapter.AFTER_END in last["observations"][0]["content"]
        assert "/app/answer.txt" in result["messages"][-1]["content"]
        assert '"name": "submit"' in result["messages"][0]["content"]
    assert wait_for_nothing_left(before) == {"processes": [], "runtime dirs": [], "cgroups": []}
    for env in made:
        env.close()  # a second close does nothing
    aggregated = adapter.TaskgymTextEnv.aggregate_metrics([r["metrics"] for r in results])
    assert aggregated["reward"] == 0.5 and aggregated["graded"] == 1.0


def test_the_prompt_carries_the_tools_and_the_instruction(task: Path) -> None:
    env = make(task)
    messages, info = env.init([{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": "Here is a task."}])
    env.close()
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[0]["content"].startswith("Be brief.\n\n# Tools")
    tools = messages[0]["content"].split("<tools>\n")[1].split("\n</tools>")[0].splitlines()
    assert {json.loads(line)["function"]["name"] for line in tools} == {
        t.name for t in taskgym.make("coding-terminal-v0").unwrapped.tools}
    assert messages[1]["content"].startswith("Here is a task.\n\nWrite 42 to /app/answer.txt.")
    assert info["task_id"] is not None
    xml = skyrl_gym.make("taskgym", env_config={"tool_style": "xml", "make_kwargs": {
        "tasks": str(task)}}, extras={"env_id": "coding-terminal-v0"})
    messages, _ = xml.init([{"role": "user", "content": ""}])
    xml.close()
    assert "<function=TOOL_NAME>" in messages[0]["content"] and messages[1]["content"].startswith(
        "Write 42")


def test_malformed_calls_and_replies_without_one_are_error_observations(task: Path) -> None:
    env = make(task, max_turns=3)
    env.init([{"role": "user", "content": ""}])
    out = env.step('<tool_call>\n{"name": "bash", "arguments": {"command": </tool_call>'
                   + hermes_call("bash", {"command": "echo ran"}))
    text = out["observations"][0]["content"]
    assert not out["done"] and "could not be read" in text and "ran" in text
    out = env.step("I think I am finished.")
    assert not out["done"] and out["observations"][0]["content"] == adapter.NO_CALL
    out = env.step(hermes_call("no_such_tool", {}) + "<tool_call>\x00\udcff")
    assert out["done"] and out["reward"] == 0.0  # max_turns reached, unsubmitted
    assert out["metadata"]["end"] == "unsubmitted" and out["metadata"]["verdict"] == "graded"
    assert "unknown tool" in out["observations"][0]["content"]
    metrics = env.get_metrics()
    assert metrics["tool_call_errors"] == 1.0 and metrics["tool_calls"] == 3.0
    assert metrics["unsubmitted"] == 1.0
    assert env.step(hermes_call("submit", {}))["done"]  # after the end: nothing runs
    env.close()


def test_max_turns_ends_an_unsubmitted_episode_with_the_configured_reward(task: Path) -> None:
    env = skyrl_gym.make("taskgym", env_config={"unsubmitted": 0.25, "make_kwargs": {
        "tasks": str(task)}}, extras={"env_id": "coding-terminal-v0", "max_turns": 1})
    env.init([{"role": "user", "content": ""}])
    out = env.step(hermes_call("bash", {"command": "echo 42 > /app/answer.txt"}))
    assert out["done"] and out["reward"] == 0.25 and out["metadata"]["end"] == "unsubmitted"
    assert env.get_metrics()["unsubmitted"] == 1.0 and env.get_metrics()["reward"] == 0.25
    assert env.env.unwrapped.is_over  # the sandbox stopped, ungraded
    env.close()


def test_no_verdict_is_reported_not_graded(task: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = make(task)
    env.init([{"role": "user", "content": ""}])

    def crash(*_: Any) -> Any:
        raise RuntimeError("the grader's own bug")

    monkeypatch.setattr(env.env.unwrapped, "verify", crash)
    out = env.step(hermes_call("submit", {}))
    assert out["done"] and out["metadata"]["verdict"] == "none"
    assert out["metadata"]["failure"] == "taskgym_crash" and out["metadata"]["end"] == "no_verdict"
    metrics = env.get_metrics()
    assert metrics["no_verdict"] == 1.0 and metrics["graded"] == 0.0
    env.close()
    output = {"env_metrics": [{"no_verdict": 0.0}, metrics], "loss_masks": [[1, 1], [1, 1, 1]]}
    assert adapter.mask_no_verdict(output) == [1]
    assert output["loss_masks"] == [[1, 1], [0, 0, 0]]


def test_an_init_that_cannot_start_the_sandbox_does_not_raise(
        task: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from taskgym.errors import SandboxError

    def no_sandbox(*_: Any, **__: Any) -> Any:
        raise SandboxError("bubblewrap could not start")

    coding = type(taskgym.make("coding-terminal-v0").unwrapped)
    monkeypatch.setattr(coding, "workspace_seed", no_sandbox)
    env = make(task)
    messages, _ = env.init([{"role": "user", "content": ""}])
    assert "bubblewrap could not start" in messages[-1]["content"]
    out = env.step(hermes_call("bash", {"command": "ls"}))
    assert out["done"] and out["metadata"]["end"] == "reset_failed"
    assert out["metadata"]["verdict"] == "none" and env.get_metrics()["no_verdict"] == 1.0
    env.close()


def test_an_id_registered_per_env_id(task: Path) -> None:
    adapter.register("taskgym-answer", "coding-terminal-v0", make_kwargs={"tasks": str(task)},
                     tool_style="xml")
    adapter.register("taskgym-answer", "coding-terminal-v0", make_kwargs={"tasks": str(task)},
                     tool_style="xml")  # the same again: nothing happens
    with pytest.raises(skyrl_gym.error.RegistrationError):
        adapter.register("taskgym-answer", "finance-pdf-v0")
    env = skyrl_gym.make("taskgym-answer", env_config={}, extras={"max_turns": 2})
    assert env.env_id == "coding-terminal-v0" and env.tool_style == "xml"
    assert episode(env, ["<tool_call>\n<function=bash>\n<parameter=command>\necho 42 > "
                         "/app/answer.txt\n</parameter>\n</function>\n</tool_call>",
                         hermes_call("submit", {})])["outputs"][-1]["reward"] == 1.0
    with pytest.raises(ConfigError, match="env id"):
        skyrl_gym.make("taskgym", env_config={}, extras={})
    with pytest.raises(ConfigError, match="tool_style"):
        adapter.register("taskgym-bad", "coding-terminal-v0", tool_style="json")


def test_a_trajectory_skyrl_cuts_short_counts_as_unsubmitted(task: Path) -> None:
    env = make(task)  # SkyRL's loop stops at max_input_length: no done, then metrics, close
    env.init([{"role": "user", "content": ""}])
    env.step(hermes_call("bash", {"command": "echo 42 > /app/answer.txt"}))
    metrics = env.get_metrics()
    assert metrics["unsubmitted"] == 1.0 and metrics["reward"] == 0.0 and metrics["turns"] == 1.0
    assert metrics["no_verdict"] == 0.0 and metrics["graded"] == 0.0
    env.close()


def test_a_dropped_env_stops_its_sandbox(task: Path) -> None:
    import gc

    before = leftovers()
    env = make(task)
    env.init([{"role": "user", "content": ""}])  # SkyRL's loop raised: no close
    del env
    gc.collect()
    assert wait_for_nothing_left(before) == {"processes": [], "runtime dirs": [], "cgroups": []}


@pytest.mark.hacks
def test_a_planted_reward_file_through_the_adapter_scores_zero(local_backend: Backend,
                                                               task: Path) -> None:
    env = skyrl_gym.make("taskgym", env_config={"make_kwargs": {
        "tasks": str(task), "sandbox": local_backend}}, extras={"env_id": "coding-terminal-v0",
                                                               "max_turns": 3})
    result = episode(env, [
        hermes_call("bash", {"command": "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt;"
                                 " echo 1 > /app/reward.txt; echo 41 > /app/answer.txt"}),
        hermes_call("write_file", {"path": "/logs/verifier/reward.json", "content": '{"reward": 1}'})
        + hermes_call("submit", {})])
    last = result["outputs"][-1]
    assert last["done"] and last["reward"] == 0.0 and last["metadata"]["verdict"] == "graded"
    assert result["verified"].score == 0.0
