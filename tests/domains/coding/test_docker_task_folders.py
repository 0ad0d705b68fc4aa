"""Harbor and Terminal-Bench 1 fixtures on the docker backend: each task's own Dockerfile is
built when the images it starts FROM are here, and a missing one is named."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.errors import SandboxUnavailableError
from taskgym.evaluation import EpisodeRecord

pytestmark = pytest.mark.docker

FIXTURES = Path(__file__).parents[3] / "fixtures"


@pytest.fixture(scope="module")
def harbor() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("coding-terminal-v0", sandbox="docker", tasks=str(FIXTURES / "harbor"))
    yield env
    env.close()


@pytest.fixture(scope="module")
def tb1() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("coding-terminal-v0", sandbox="docker",
                       tasks=str(FIXTURES / "terminal-bench-1"))
    yield env
    env.close()


# own-dockerfile: the answer is only in the image its Dockerfile builds; the others check
# /solution and the writable /tests on this backend, and the steps of a multi-step task
@pytest.mark.parametrize("name", ["own-dockerfile", "solution-beside", "tests-moved-aside",
                                  "multi-step"])
def test_harbor_oracle_scores_one_and_null_zero(harbor: gym.Env[Any, Any], name: str,
                                               oracle_then_null: Callable[..., EpisodeRecord]
                                               ) -> None:
    oracle_then_null(harbor, task_id=name)


@pytest.mark.parametrize("name", ["own-dockerfile", "csv-column-sum"])
def test_terminal_bench_1_oracle_scores_one_and_null_zero(
        tb1: gym.Env[Any, Any], name: str,
        oracle_then_null: Callable[..., EpisodeRecord]) -> None:
    oracle_then_null(tb1, task_id=name)


def test_a_missing_base_image_is_named(harbor: gym.Env[Any, Any]) -> None:
    with pytest.raises(SandboxUnavailableError,
                       match=r"starts FROM registry\.invalid/taskgym-fixtures/absent-base:1\.0, "
                             "which this Docker engine does not have"):
        harbor.reset(options={"task_id": "missing-base-image"})
