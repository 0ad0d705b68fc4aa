"""The verdict through the API: ``step``, ``astep``, ``on_no_verdict="raise"``, vector envs,
replayed resets, forks and grouped rollouts carry it per episode.

The fault: the verifier raises :class:`HostResourceError` (the host out of descriptors) when
the agent left a file named ``fault`` (so one sub-env of a batch fails and the others do not).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym import HostResourceError, NoVerdictError, rollouts
from taskgym.domains.coding import CodingEnv
from taskgym.errors import ConfigError, SandboxError

pytestmark = [pytest.mark.sandbox]

CALC = Path(__file__).parent.parent / "fixtures" / "coding" / "calc"
SUBMIT = {"tool": "submit", "args": {}}
FAULT = {"tool": "write_file", "args": {"path": "fault", "content": "x"}}
ECHO = {"tool": "bash", "args": {"command": "echo hi"}}


@pytest.fixture(autouse=True)
def faulty_host(monkeypatch: pytest.MonkeyPatch) -> None:
    verify = CodingEnv.verify

    def verify_unless_faulted(self: CodingEnv, task: Any, session: Any) -> Any:
        try:
            session.read_file("fault", limit=10)
        except SandboxError:
            return verify(self, task, session)
        raise HostResourceError("could not start bwrap: this process has no file descriptor left")

    monkeypatch.setattr(CodingEnv, "verify", verify_unless_faulted)


@pytest.fixture()
def env() -> Iterator[Any]:
    made = taskgym.make("coding-terminal-v0", tasks=str(CALC))
    yield made
    made.close()


def assert_no_verdict(reward: float, terminated: bool, truncated: bool,
                      info: dict[str, Any]) -> None:
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert (info["verdict"], info["failure"]) == ("none", "host_resources")
    assert "descriptor" in info["error"] and not info["reward"].graded


def test_step_ends_with_no_verdict_and_only_the_end_has_one(env: Any) -> None:
    env.reset(seed=0)
    *_, info = env.step(FAULT)
    assert "verdict" not in info  # not over yet: no verdict key at all
    assert_no_verdict(*env.step(SUBMIT)[1:])
    env.reset(seed=0)
    *_, info = env.step(SUBMIT)
    assert info["verdict"] == "graded" and "failure" not in info


def test_astep_keeps_the_verdict(env: Any) -> None:
    env.reset(seed=0)

    async def play() -> Any:
        await env.unwrapped.astep(FAULT)
        return await env.unwrapped.astep(SUBMIT)

    assert_no_verdict(*asyncio.run(play())[1:])


def test_on_no_verdict_raise_raises_after_cleaning_up() -> None:
    env = taskgym.make("coding-terminal-v0", tasks=str(CALC), on_no_verdict="raise")
    try:
        env.reset(seed=0)
        session = env.unwrapped.session
        env.step(FAULT)
        with pytest.raises(NoVerdictError) as raised:
            env.step(SUBMIT)
        error = raised.value
        assert error.failure == "host_resources" and "descriptor" in error.reason
        assert error.result.verdict == "none" and not session.alive
        env.reset(seed=0)  # the env is reusable
        *_, info = env.step(SUBMIT)
        assert info["verdict"] == "graded"
    finally:
        env.close()


def test_on_no_verdict_takes_end_or_raise() -> None:
    with pytest.raises(ConfigError, match="on_no_verdict"):
        taskgym.make("coding-terminal-v0", tasks=str(CALC), on_no_verdict="ignore")


def test_a_vector_env_carries_the_verdict_per_sub_env() -> None:
    venv = taskgym.make_vec("coding-terminal-v0", num_envs=2, tasks=str(CALC))
    try:
        venv.reset(seed=0)
        venv.step((FAULT, ECHO))
        _obs, rewards, terminated, truncated, infos = venv.step((SUBMIT, SUBMIT))
        assert list(terminated) == [True, True] and list(rewards) == [0.0, 0.0]
        assert list(infos["verdict"]) == ["none", "graded"]
        assert list(infos["_failure"]) == [True, False] and infos["failure"][0] == "host_resources"
    finally:
        venv.close()


def test_a_replayed_reset_and_its_forks_keep_the_verdict(env: Any) -> None:
    env.reset(options={"task_id": "calc", "replay": [FAULT]})
    forks = env.unwrapped.fork(2)
    try:
        assert_no_verdict(*env.step(SUBMIT)[1:])
        for fork in forks:
            assert_no_verdict(*fork.step(SUBMIT)[1:])
    finally:
        for fork in forks:
            fork.close()


def test_grouped_rollouts_keep_the_verdict_and_on_no_verdict() -> None:
    envs = rollouts.group("coding-terminal-v0", "calc", [FAULT], 2, tasks=str(CALC),
                          on_no_verdict="raise")
    try:
        with pytest.raises(NoVerdictError):
            envs[0].step(SUBMIT)
        envs[1].step({"tool": "bash", "args": {"command": "rm fault"}})
        *_, info = envs[1].step(SUBMIT)
        assert info["verdict"] == "graded"
    finally:
        for made in envs:
            made.close()
