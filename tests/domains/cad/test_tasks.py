"""Every curated part and 6 seeds of each family: the oracle succeeds, a null agent scores 0."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.agents import NullAgent, OracleAgent
from taskgym.domains.cad import FAMILIES
from taskgym.evaluation import run_episode
from taskgym.paths import envs_dir

pytestmark = pytest.mark.sandbox

CURATED = sorted(p.name for p in (envs_dir() / "cad-cadquery-v0" / "tasks").iterdir()
                 if (p / "instruction.md").is_file())
FIXTURES = Path(__file__).parents[3] / "fixtures" / "cad"


def test_there_are_at_least_25_curated_parts() -> None:
    assert len(CURATED) >= 25


@pytest.mark.parametrize("task_id", CURATED)
def test_curated_oracle_succeeds_and_null_scores_zero(curated_env: gym.Env[Any, Any],
                                                      task_id: str) -> None:
    oracle = run_episode(curated_env, OracleAgent(curated_env), task_id=task_id)
    assert oracle.success and oracle.score == pytest.approx(1.0, abs=1e-6), oracle
    assert oracle.components["check_bbox"] == 1.0
    null = run_episode(curated_env, NullAgent(), task_id=task_id)
    assert (null.score, null.success) == (0.0, False), null


def _oracle_and_null(env: gym.Env[Any, Any], task_id: str) -> str | None:
    """What went wrong with ``task_id`` (oracle below full success, null above zero), if anything."""
    oracle = run_episode(env, OracleAgent(env), task_id=task_id)
    if not (oracle.success and oracle.score == pytest.approx(1.0, abs=1e-6)):
        return f"{task_id}: oracle {oracle}"
    null = run_episode(env, NullAgent(), task_id=task_id)
    if (null.score, null.success) != (0.0, False):
        return f"{task_id}: null {null}"
    return None


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_generated_oracle_succeeds_and_null_scores_zero(family: str) -> None:
    """6 seeds (a sample: each first reset also gates the reference), graded two at a time
    (each grading is mostly a CadQuery import in a fresh
    sandbox, so two threads use both cores of a CI machine)."""
    envs = [taskgym.make("cad-cadquery-v0", tasks="generated") for _ in range(2)]
    try:
        seeds = list(range(6))
        with ThreadPoolExecutor(len(envs)) as pool:
            problems = list(pool.map(
                lambda env_seeds: [_oracle_and_null(env_seeds[0], f"{family}-{seed}")
                                   for seed in env_seeds[1]],
                [(env, seeds[i :: len(envs)]) for i, env in enumerate(envs)]))
    finally:
        for env in envs:
            env.close()
    failures = [p for chunk in problems for p in chunk if p is not None]
    assert not failures, "\n".join(failures)


def test_generated_tasks_are_deterministic(tmp_path: Path) -> None:
    from taskgym.domains.cad.generators import FAMILIES as names
    from taskgym.domains.cad.generators import generate

    for family in names:
        generate(family, 7, tmp_path / f"{family}-a")
        generate(family, 7, tmp_path / f"{family}-b")
        for name in ("instruction.md", "task.toml", "tests/reference.py"):
            assert (tmp_path / f"{family}-a" / name).read_bytes() == (
                tmp_path / f"{family}-b" / name).read_bytes()


@pytest.mark.parametrize("folder", ["step-plate-cm", "stl-ring", "stl-tiny-plate", "tiny-part"])
def test_user_task_folders_with_step_and_stl_references(folder: str) -> None:
    env = taskgym.make("cad-cadquery-v0", tasks=str(FIXTURES / folder))
    try:
        oracle = run_episode(env, OracleAgent(env))
        assert oracle.success and oracle.score > 0.99, oracle
        assert run_episode(env, NullAgent()).score == 0.0
    finally:
        env.close()
