"""The Gymnasium contract: check_env for every registered id, vector envs, stepping rules."""

from __future__ import annotations

import asyncio
import threading
from types import SimpleNamespace
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import taskgym
from taskgym.core.tool import SubmitArgs, Tool, ToolResult
from taskgym.core.vector import TaskVectorEnv
from taskgym.domains.coding import CodingEnv

pytestmark = pytest.mark.sandbox

ECHO = {"tool": "bash", "args": {"command": "echo hi"}}
SUBMIT = {"tool": "submit", "args": {}}


@pytest.mark.parametrize("env_id", sorted(taskgym.list_envs()))
def test_check_env_passes_for_every_registered_id(env_id: str) -> None:
    env = taskgym.make(env_id, max_steps=3)
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


def test_gymnasium_make_with_namespace() -> None:
    env = gym.make("taskgym/coding-terminal-v0")
    try:
        obs, info = env.reset(seed=3)
        assert env.observation_space.contains(obs)
        assert {t["function"]["name"] for t in info["tools"]} == {
            "bash", "read_file", "write_file", "submit"}
    finally:
        env.close()


@pytest.mark.parametrize("vector", ["sync", "async", "async-shared-memory"])
def test_vector_envs(vector: str) -> None:
    fns = [lambda: taskgym.make("coding-terminal-v0") for _ in range(2)]
    venv: gym.vector.VectorEnv[Any, Any, Any]
    if vector == "sync":
        venv = gym.vector.SyncVectorEnv(fns)
    else:
        venv = gym.vector.AsyncVectorEnv(fns, shared_memory=vector == "async-shared-memory")
    try:
        obs, info = venv.reset(seed=[0, 1])
        assert len(obs["text"]) == 2 and list(info["task_id"]) == sorted(info["task_id"])
        obs, reward, terminated, truncated, info = venv.step((ECHO, ECHO))
        assert tuple(obs["text"]) == ("hi\n[exit code 0]",) * 2
        obs, reward, terminated, truncated, info = venv.step((SUBMIT, SUBMIT))
        assert list(terminated) == [True, True] and list(reward) == [0.0, 0.0]
    finally:
        venv.close()


@pytest.mark.parametrize("how", ["default", "vector_entry_point", "sync", "async",
                                 "async-no-shared-memory"])
def test_make_vec(how: str) -> None:
    # what docs/quickstart.md says works with gymnasium.make_vec; kwargs reach every sub-env
    kwargs: dict[str, Any] = {
        "default": {}, "vector_entry_point": {"vectorization_mode": "vector_entry_point"},
        "sync": {"vectorization_mode": "sync"}, "async": {"vectorization_mode": "async"},
        "async-no-shared-memory": {"vectorization_mode": "async",
                                   "vector_kwargs": {"shared_memory": False}}}[how]
    venv = gym.make_vec("taskgym/coding-terminal-v0", num_envs=2, tasks="generated:spec",
                        **kwargs)
    try:
        assert isinstance(venv, gym.vector.AsyncVectorEnv if how.startswith("async")
                          else gym.vector.SyncVectorEnv if how == "sync"
                          else TaskVectorEnv)
        obs, info = venv.reset(seed=[0, 1])
        assert list(info["task_id"]) == ["spec-0", "spec-1"]
        obs, reward, terminated, truncated, info = venv.step((ECHO, SUBMIT))
        assert obs["text"][0] == "hi\n[exit code 0]"
        assert list(terminated) == [False, True]
    finally:
        venv.close()


def test_reset_with_an_unknown_option_leaves_the_episode_running() -> None:
    env = taskgym.make("coding-terminal-v0")
    try:
        env.reset(seed=0)
        with pytest.raises(taskgym.ConfigError, match=r"^unknown reset option\(s\) 'seed'; "
                                                      r"known: 'task_id', 'replay'$"):
            env.reset(options={"seed": 1})
        obs, reward, terminated, truncated, info = env.step(ECHO)
        assert obs["text"] == "hi\n[exit code 0]" and not (terminated or truncated)
    finally:
        env.close()


def test_step_after_the_end_reports_an_error() -> None:
    env = taskgym.make("coding-terminal-v0")
    try:
        env.reset(seed=0)
        env.step(SUBMIT)
        obs, reward, terminated, truncated, info = env.step(ECHO)
        assert terminated and reward == 0.0 and "reset()" in info["error"]
    finally:
        env.close()


def test_step_limit_truncates_and_grades() -> None:
    env = taskgym.make("coding-terminal-v0", max_steps=2)
    try:
        env.reset(seed=0)
        assert env.step(ECHO)[3] is False
        obs, reward, terminated, truncated, info = env.step(ECHO)
        assert truncated and not terminated and "step limit" in obs["text"]
        assert info["reward"].score == reward == 0.0
    finally:
        env.close()


def test_malformed_actions_never_raise_and_count_as_steps() -> None:
    env = taskgym.make("coding-terminal-v0")
    bad: list[Any] = ["{not json", '{"tool": "rm -rf"}', {"tool": "bash", "args": {"command": 7}},
                      {"tool": "bash", "args": {"command": "x" * 2_000_000}}, None, 42,
                      {"tool": "bash", "args": {"command": "echo \x00"}},
                      {"tool": "read_file", "args": {"path": "../../etc/passwd"}},
                      {"tool": "write_file", "args": {"path": "/etc/x", "content": "x"}},
                      "\x1b[31m\x07" * 1000]
    try:
        env.reset(seed=0)
        for step, action in enumerate(bad, start=1):
            obs, reward, terminated, truncated, info = env.step(action)
            assert info["step"] == step and info["error"], action
            assert obs["text"].startswith("error: ") and not terminated
        assert env.step(ECHO)[0]["text"] == "hi\n[exit code 0]"
    finally:
        env.close()


def test_many_envs_step_from_threads() -> None:
    envs = [taskgym.make("coding-terminal-v0") for _ in range(6)]
    outputs: list[str] = []
    lock = threading.Lock()

    def work(env: gym.Env[Any, Any], i: int) -> None:
        env.reset(seed=i)
        for j in range(20):
            text = env.step({"tool": "bash", "args": {"command": f"echo {i}-{j}"}})[0]["text"]
            with lock:
                outputs.append(text)

    threads = [threading.Thread(target=work, args=(e, i)) for i, e in enumerate(envs)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        for env in envs:
            env.close()
    assert sorted(outputs) == sorted(f"{i}-{j}\n[exit code 0]" for i in range(6) for j in range(20))


def test_stepping_does_not_block_an_event_loop() -> None:
    env = taskgym.make("coding-terminal-v0")
    env.reset(seed=0)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    async def main() -> str:
        task = asyncio.create_task(ticker())
        obs, *_ = await asyncio.to_thread(
            env.step, {"tool": "bash", "args": {"command": "sleep 0.5; echo done"}})
        task.cancel()
        return str(obs["text"])

    try:
        assert asyncio.run(main()).startswith("done")
        assert ticks >= 20  # the loop kept running while the command slept
    finally:
        env.close()


LONE = "\ud800"
SURROGATES: list[Any] = [
    {"tool": "bash", "args": {"command": f"echo {LONE}"}},
    '{"tool": "bash", "args": {"command": "echo \\ud800"}}',
    {"tool": "read_file", "args": {"path": LONE}},
    {"tool": "write_file", "args": {"path": f"a{LONE}", "content": "x"}},
    {"tool": "write_file", "args": {"path": "a", "content": "\udc80"}},
    {"function": {"name": "bash", "arguments": '{"command": "ls \\udfff"}'}},
    SimpleNamespace(id="c", function=SimpleNamespace(name="bash", arguments={"command": LONE})),
    {"tool": f"bash{LONE}", "args": {}},
]


def test_strings_that_are_not_utf8_are_error_observations() -> None:
    env = taskgym.make("coding-terminal-v0", render_mode="ansi")
    try:
        env.reset(seed=0)
        for step, action in enumerate(SURROGATES, start=1):
            obs, reward, terminated, truncated, info = env.step(action)
            assert info["step"] == step and info["error"], action
            assert obs["text"] == f"error: {info['error']}" and not (terminated or truncated)
            obs["text"].encode("utf-8")
        assert env.step(ECHO)[0]["text"] == "hi\n[exit code 0]"
        listing = env.step({"tool": "bash", "args": {"command": "ls -a | grep -c '^a'"}})
        assert listing[0]["text"] == "0\n[exit code 1]"  # the refused write_file wrote nothing
        env.render().encode("utf-8")  # type: ignore[union-attr]
    finally:
        env.close()


class _Crashing(CodingEnv):
    """The coding env with a tool that has a bug, and a verifier that may have one."""

    verifier_bug = False

    def make_tools(self) -> list[Tool]:
        def buggy(_args: Any) -> ToolResult:
            return {}["missing"]  # type: ignore[no-any-return]

        return [*super().make_tools(), Tool("buggy", "Has a bug.", SubmitArgs, buggy)]

    def verify(self, task: Any, session: Any) -> Any:
        if self.verifier_bug:
            raise ZeroDivisionError("verifier bug")
        return super().verify(task, session)


def test_a_tool_bug_ends_the_episode_with_a_crash_record(tmp_path, answer_task) -> None:
    answer_task(tmp_path / "t")
    env = _Crashing(tasks=tmp_path)
    try:
        env.reset(seed=0)
        session = env.session
        assert env.step(ECHO)[0]["text"] == "hi\n[exit code 0]"
        obs, reward, terminated, truncated, info = env.step({"tool": "buggy", "args": {}})
        assert (reward, terminated, truncated) == (0.0, True, False)
        crash = info["crash"]
        assert (crash["type"], crash["message"], crash["where"]) == (
            "KeyError", "'missing'", "the buggy tool")
        assert 'return {}["missing"]' in crash["traceback"]
        assert info["error"].startswith("taskgym crashed in the buggy tool: KeyError: 'missing'.")
        assert obs["text"] == f"error: {info['error']}"
        assert (info["verdict"], info["failure"]) == ("none", "taskgym_crash")
        assert info["reward"] == env.last_reward and not info["reward"].graded
        assert not session.alive  # the sandbox is gone
        assert "reset()" in env.step(ECHO)[4]["error"]  # the episode is over
        env.reset(seed=0)  # and the env works again
        assert env.step(ECHO)[0]["text"] == "hi\n[exit code 0]"
    finally:
        env.close()


def test_a_verifier_bug_ends_the_episode_with_a_crash_record(tmp_path, answer_task) -> None:
    answer_task(tmp_path / "t")
    env = _Crashing(tasks=tmp_path)
    env.verifier_bug = True
    try:
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step(SUBMIT)
        assert (reward, terminated, truncated) == (0.0, True, False)
        assert (info["crash"]["type"], info["crash"]["where"]) == ("ZeroDivisionError", "grading")
        assert "verifier bug" in info["error"]
        assert (info["verdict"], info["failure"]) == ("none", "taskgym_crash")
        assert env.last_reward is not None and env.last_reward.failure == "taskgym_crash"
    finally:
        env.close()
