"""Fixtures of the mesh tests: the curated env, and a grader for hand-made mesh files."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.domains.mesh.verifier import grade_file
from taskgym.sandbox import Backend

pytest.importorskip("trimesh", reason="the mesh extra is not installed: pip install 'taskgym[mesh]'")
pytest.importorskip("manifold3d", reason="the mesh extra is not installed: pip install 'taskgym[mesh]'")


@pytest.fixture(scope="session")
def curated_env() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("mesh-trimesh-v0")
    yield env
    env.close()


@pytest.fixture(scope="module")
def grade(backend: Backend, curated_env: gym.Env[Any, Any]) -> Callable[[str, str, bytes], RewardResult]:
    """Grade ``data`` submitted as a file ``name`` for the curated task ``task_id``, as submit
    would, on each backend in turn."""

    def run(task_id: str, name: str, data: bytes) -> RewardResult:
        task: Task = curated_env.unwrapped.task_set.get(task_id)  # type: ignore[attr-defined]
        return grade_file(task, name, data, backend)

    return run
