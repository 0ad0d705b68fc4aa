"""Every curated task and 50 generated ones: the oracle scores 1, a null agent 0, and the
hacks a policy would try (wrong scale, many numbers) score 0 through the env."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.agents import OracleAgent, ScriptedAgent
from taskgym.domains.finance import GENERATORS, load_gold
from taskgym.evaluation import EpisodeRecord, run_episode
from taskgym.paths import envs_dir

pytestmark = pytest.mark.sandbox

TASKS = envs_dir() / "finance-pdf-v0" / "tasks"
CURATED = sorted(p.name for p in TASKS.iterdir() if (p / "instruction.md").is_file())
# 50 generated tasks: 9 of each short family, 5 long filings
GENERATED = [f"{family}-{seed}" for family in GENERATORS if family != "long"
             for seed in range(9)] + [f"long-{seed}" for seed in range(5)]


def test_the_curated_set_has_60_questions_over_10_pdfs() -> None:
    assert len(CURATED) >= 60
    pdfs = {p.read_bytes() for p in TASKS.glob("*/environment/files/*.pdf")}
    assert len(pdfs) >= 10
    families = {json.loads((TASKS / t / "tests" / "answer.json").read_text())["kind"]
                for t in CURATED}
    assert families == {"number", "text", "not_stated"}


@pytest.fixture(scope="module")
def curated() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("finance-pdf-v0")
    yield env
    env.close()


@pytest.mark.parametrize("task_id", CURATED)
def test_curated_oracle_scores_one_and_null_zero(curated: gym.Env[Any, Any], task_id: str,
                                                 oracle_then_null: Callable[..., EpisodeRecord]
                                                 ) -> None:
    oracle = oracle_then_null(curated, task_id=task_id)
    assert oracle.components["pages"] == 1.0


@pytest.fixture(scope="module")
def generated() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("finance-pdf-v0", tasks="generated")
    yield env
    env.close()


@pytest.mark.parametrize("task_id", GENERATED)
def test_generated_oracle_scores_one_and_null_zero(generated: gym.Env[Any, Any],
                                                   task_id: str,
                                                   oracle_then_null: Callable[..., EpisodeRecord]
                                                   ) -> None:
    oracle_then_null(generated, task_id=task_id)


def _number_tasks(scale: str) -> list[str]:
    return [t for t in CURATED
            if json.loads((TASKS / t / "tests" / "answer.json").read_text()).get("scale") == scale
            and json.loads((TASKS / t / "tests" / "answer.json").read_text())["kind"] == "number"]


@pytest.mark.parametrize("task_id", _number_tasks("millions")[:3] + _number_tasks("thousands")[:3])
def test_the_right_number_with_the_wrong_scale_scores_zero(curated: gym.Env[Any, Any],
                                                           task_id: str) -> None:
    solution = json.loads((TASKS / task_id / "solution" / "answer.json").read_text())
    wrong = "thousands" if solution["unit"] == "millions" else "millions"
    for unit in (wrong, "", "billions"):
        agent = ScriptedAgent([{"tool": "submit", "args": {**solution, "unit": unit}}])
        record = run_episode(curated, agent, task_id=task_id)
        assert (record.score, record.components["scale"]) == (0.0, 0.0), (unit, record)


@pytest.mark.parametrize("task_id", _number_tasks("millions")[:2] + _number_tasks("percent")[:2])
def test_an_answer_stuffed_with_numbers_scores_zero(curated: gym.Env[Any, Any],
                                                    task_id: str) -> None:
    gold = load_gold(curated.unwrapped.task_set.get(task_id))
    assert gold.value is not None
    around = [gold.value + step * 10 ** -gold.decimals for step in range(-50, 51)]
    stuffed = " ".join(f"{v:,.{gold.decimals}f}" for v in around)
    agent = ScriptedAgent([{"tool": "submit", "args": {"answer": stuffed, "unit": gold.scale}}])
    record = run_episode(curated, agent, task_id=task_id)
    assert record.score == 0.0, record


def test_a_user_task_folder_loads_with_tasks_path(tmp_path: Any) -> None:
    import shutil
    shutil.copytree(TASKS / CURATED[0], tmp_path / "mine" / "my-question")
    (tmp_path / "mine" / "my-question" / "task.toml").write_text("")  # documents: every PDF
    env = taskgym.make("finance-pdf-v0", tasks=tmp_path / "mine")
    try:
        record = run_episode(env, OracleAgent(env))
        assert record.task_id == "my-question"
        assert record.score == 1.0
    finally:
        env.close()
