"""Every curated task and 20 seeds of each generator: the oracle scores 1, a null agent 0."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.agents import NullAgent, OracleAgent
from taskgym.core.paths import envs_dir
from taskgym.domains.coding import GENERATORS
from taskgym.evaluation import run_episode

pytestmark = pytest.mark.sandbox

CURATED = sorted(p.name for p in (envs_dir() / "coding-terminal-v0" / "tasks").iterdir()
                 if (p / "instruction.md").is_file())
SEEDS = range(20)


def test_there_are_at_least_30_curated_tasks() -> None:
    assert len(CURATED) >= 30


@pytest.fixture(scope="module")
def curated() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("coding-terminal-v0")
    yield env
    env.close()


@pytest.mark.parametrize("task_id", CURATED)
def test_curated_oracle_scores_one_and_null_zero(curated: gym.Env[Any, Any], task_id: str) -> None:
    oracle = run_episode(curated, OracleAgent(curated), task_id=task_id)
    assert (oracle.score, oracle.success) == (1.0, True), oracle
    null = run_episode(curated, NullAgent(), task_id=task_id)
    assert (null.score, null.success) == (0.0, False), null
    expected = curated.unwrapped.task_set.get(task_id).config["verifier"]["expected_tests"]
    assert oracle.components["tests_expected"] == expected


@pytest.fixture(scope="module")
def generated() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("coding-terminal-v0", tasks="generated")
    yield env
    env.close()


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("generator", GENERATORS)
def test_generated_oracle_scores_one_and_null_zero(generated: gym.Env[Any, Any], generator: str,
                                                   seed: int) -> None:
    task_id = f"{generator}-{seed}"
    oracle = run_episode(generated, OracleAgent(generated), task_id=task_id)
    assert (oracle.score, oracle.success) == (1.0, True), oracle
    null = run_episode(generated, NullAgent(), task_id=task_id)
    assert (null.score, null.success) == (0.0, False), null


def test_harbor_test_sh_task() -> None:
    folder = Path(__file__).parents[3] / "fixtures" / "coding" / "harbor-hello"
    env = taskgym.make("coding-terminal-v0", tasks=str(folder))
    try:
        assert run_episode(env, OracleAgent(env)).score == 1.0
        assert run_episode(env, NullAgent()).score == 0.0
    finally:
        env.close()
