"""Every curated task and 20 seeds of each generator: the oracle scores 1, a null agent 0."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.agents import NullAgent, OracleAgent
from taskgym.domains.coding import GENERATORS
from taskgym.evaluation import EpisodeRecord, run_episode
from taskgym.paths import envs_dir

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
def test_curated_oracle_scores_one_and_null_zero(curated: gym.Env[Any, Any], task_id: str,
                                                 oracle_then_null: Callable[..., EpisodeRecord]
                                                 ) -> None:
    oracle = oracle_then_null(curated, task_id=task_id)
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
                                                   seed: int,
                                                   oracle_then_null: Callable[..., EpisodeRecord]
                                                   ) -> None:
    oracle_then_null(generated, task_id=f"{generator}-{seed}")


def test_harbor_test_sh_task() -> None:
    folder = Path(__file__).parents[3] / "fixtures" / "coding" / "harbor-hello"
    env = taskgym.make("coding-terminal-v0", tasks=str(folder))
    try:
        assert run_episode(env, OracleAgent(env)).score == 1.0
        assert run_episode(env, NullAgent()).score == 0.0
    finally:
        env.close()
