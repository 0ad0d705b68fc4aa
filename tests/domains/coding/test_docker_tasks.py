"""Coding tasks on the docker backend: the oracle scores 1 and a null agent 0."""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.agents import NullAgent, OracleAgent
from taskgym.evaluation import EpisodeRecord, run_episode
from taskgym.paths import envs_dir

pytestmark = pytest.mark.docker

# every third curated task but the perf-* ones, whose timed tests take minutes of CPU each on
# a busy 2-CPU machine (the local backend's suite runs every curated task)
CURATED = sorted(p.name for p in (envs_dir() / "coding-terminal-v0" / "tasks").iterdir()
                 if (p / "instruction.md").is_file() and not p.name.startswith("perf-"))[::3][:12]


@pytest.fixture(scope="module")
def curated() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("coding-terminal-v0", sandbox="docker")
    yield env
    env.close()


def test_at_least_ten_tasks_are_sampled() -> None:
    assert len(CURATED) >= 10


@pytest.mark.parametrize("task_id", CURATED)
def test_curated_oracle_scores_one_and_null_zero(curated: gym.Env[Any, Any], task_id: str,
                                                 oracle_then_null: Callable[..., EpisodeRecord]
                                                 ) -> None:
    oracle_then_null(curated, task_id=task_id)


def test_generated_task(curated: gym.Env[Any, Any]) -> None:
    env = taskgym.make("coding-terminal-v0", sandbox="docker", tasks="generated")
    try:
        assert run_episode(env, OracleAgent(env), task_id="mutation-0").score == 1.0
        assert run_episode(env, NullAgent(), task_id="mutation-0").score == 0.0
    finally:
        env.close()


def test_a_task_with_its_own_dockerfile(tmp_path: Path, answer_task: Callable[..., Path]) -> None:
    folder = answer_task(tmp_path / "own-image",
                         solve="cat /usr/local/share/task/answer > /app/answer.txt\n")
    (folder / "environment" / "Dockerfile").write_text(textwrap.dedent("""\
        FROM taskgym/coding-terminal-v0
        USER root
        RUN mkdir -p /usr/local/share/task && echo 42 > /usr/local/share/task/answer
        USER 1000:1000
        """))
    env = taskgym.make("coding-terminal-v0", sandbox="docker", tasks=str(folder))
    try:
        assert run_episode(env, OracleAgent(env)).score == 1.0  # the answer is in the image
        assert run_episode(env, NullAgent()).score == 0.0
    finally:
        env.close()
