"""What a policy would try against finance-pdf-v0's reward; each must gain nothing."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.agents import ScriptedAgent
from taskgym.domains import finance
from taskgym.domains.finance.answers import GoldAnswer, grade
from taskgym.errors import MissingDependencyError
from taskgym.evaluation import run_episode
from taskgym.paths import envs_dir

TASKS = envs_dir() / "finance-pdf-v0" / "tasks"
TASK = "co1-18-chart"


@pytest.fixture(scope="module")
def env() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("finance-pdf-v0")
    yield env
    env.close()


def submit(env: gym.Env[Any, Any], **args: Any) -> Any:
    return run_episode(env, ScriptedAgent([{"tool": "submit", "args": args}]), task_id=TASK)


@pytest.mark.sandbox
def test_citing_every_page_does_not_max_the_pages_component(env: gym.Env[Any, Any]) -> None:
    solution = json.loads((TASKS / TASK / "solution" / "answer.json").read_text())
    record = submit(env, answer=solution["answer"], unit=solution["unit"],
                    pages=list(range(1, 51)))
    assert record.score == 1.0
    assert record.components["pages"] < 0.1


@pytest.mark.sandbox
def test_always_answering_not_stated_fails_number_questions(env: gym.Env[Any, Any]) -> None:
    assert submit(env, answer="not stated").score == 0.0


@pytest.mark.sandbox
def test_the_number_in_the_unit_field_does_not_count(env: gym.Env[Any, Any]) -> None:
    solution = json.loads((TASKS / TASK / "solution" / "answer.json").read_text())
    assert submit(env, answer="percent", unit=solution["answer"]).score == 0.0


@pytest.mark.sandbox
def test_a_run_out_of_steps_without_submitting_scores_zero() -> None:
    env = taskgym.make("finance-pdf-v0", max_steps=2)
    try:
        agent = ScriptedAgent([{"tool": "search", "args": {"query": "revenue"}}] * 5)
        record = run_episode(env, agent, task_id=TASK)
        assert record.steps == 2 and record.score == 0.0
    finally:
        env.close()


def test_unicode_lookalikes_and_hidden_digits_do_not_pass_as_one_number() -> None:
    gold = GoldAnswer(kind="number", value=20.3, scale="percent", decimals=1)
    for answer in ("20.3\u200b20.4%", "20.3%\u00a020.4%", "20.3\u2009%\u200d1"):  # zero-width, nbsp
        assert grade(gold, answer, "percent", [], ["a.pdf"]).score == 0.0, answer


def test_a_missing_extra_names_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pdfplumber" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r"pip install 'taskgym\[pdf\]'"):
        finance.FinanceEnv()


@pytest.mark.sandbox
def test_generated_tasks_answers_in_the_cache_are_not_in_the_sandbox() -> None:
    env = taskgym.make("finance-pdf-v0", tasks="generated")
    try:
        env.reset(options={"task_id": "multihop-1"})
        task_path = str(env.unwrapped.task.path)
        obs, *_ = env.step({"tool": "python", "args": {"code": (
            "import os\nfound = []\n"
            "for root, dirs, files in os.walk('/'):\n"
            "    dirs[:] = [d for d in dirs if os.path.join(root, d) not in ('/proc', '/sys')]\n"
            "    found += [os.path.join(root, f) for f in files if f == 'answer.json']\n"
            f"print('FOUND', found, os.path.exists({task_path!r}))")}})
        assert "FOUND [] False" in obs["text"], obs["text"]
    finally:
        env.close()
