"""Fixtures of the CAD tests: one env per task set, and a grader for hand-written parts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.domains.cad.verifier import grade_code
from taskgym.sandbox import Backend

pytest.importorskip("cadquery", reason="the cad extra is not installed: pip install 'taskgym[cad]'")


@pytest.fixture(scope="session")
def curated_env() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("cad-cadquery-v0")
    yield env
    env.close()


@pytest.fixture(scope="session")
def grade(local_backend: Backend, curated_env: gym.Env[Any, Any]) -> Callable[[str, str], RewardResult]:
    """Grade ``code`` as a submission for the curated task ``task_id``, as submit would."""

    def run(task_id: str, code: str) -> RewardResult:
        task: Task = curated_env.unwrapped.task_set.get(task_id)  # type: ignore[attr-defined]
        return grade_code(task, code.encode(), local_backend)

    return run
