"""Fixtures of the CAD tests: one env per task set, and a grader for hand-written parts."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.domains.cad.verifier import grade_code
from taskgym.paths import envs_dir
from taskgym.sandbox import Backend

pytest.importorskip("cadquery", reason="the cad extra is not installed: pip install 'taskgym[cad]'")


@pytest.fixture(scope="session")
def curated_env() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("cad-cadquery-v0")
    yield env
    env.close()


@pytest.fixture(scope="module")
def grade(backend: Backend, curated_env: gym.Env[Any, Any]) -> Callable[[str, str], RewardResult]:
    """Grade ``code`` as a submission for the curated task ``task_id``, as submit would, on
    each backend in turn."""

    def run(task_id: str, code: str) -> RewardResult:
        task: Task = curated_env.unwrapped.task_set.get(task_id)  # type: ignore[attr-defined]
        return grade_code(task, code.encode(), backend)

    return run


@pytest.fixture(scope="session")
def tight_task(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """plate-four-holes with a 5 s, 256 MB bound on the agent's code."""
    folder = tmp_path_factory.mktemp("tight") / "plate-four-holes"
    shutil.copytree(envs_dir() / "cad-cadquery-v0" / "tasks" / "plate-four-holes", folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text() + "run_timeout_sec = 5\nrun_memory_mb = 256\n")
    return folder
