"""Fixtures of the game tests: the engine must be installed; an env per backend."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator

import pytest

import taskgym
from taskgym.core.reward import RewardResult
from taskgym.domains.game import GameEnv
from taskgym.sandbox import Backend

if shutil.which("godot3-server") is None:
    # CI (scripts/test.sh sets TASKGYM_REQUIRE_SANDBOX) installs the engine: the attack tests
    # must run there, never skip
    if os.environ.get("TASKGYM_REQUIRE_SANDBOX"):
        raise pytest.UsageError("TASKGYM_REQUIRE_SANDBOX is set but the Godot 3 engine is not "
                                "installed: ./scripts/install.sh --game")
    pytest.skip("the Godot 3 engine is not installed: sudo apt-get install godot3-server",
                allow_module_level=True)


@pytest.fixture(scope="module")
def game_env(backend: Backend) -> Iterator[GameEnv]:
    env = taskgym.make("game-godot-v0", sandbox=backend).unwrapped
    assert isinstance(env, GameEnv)
    yield env
    env.close()


Play = Callable[[str, dict[str, str]], RewardResult]


@pytest.fixture()
def play(game_env: GameEnv) -> Play:
    """Start ``task_id``, write ``files`` into /app (over the project), submit; the reward."""

    def run(task_id: str, files: dict[str, str]) -> RewardResult:
        game_env.reset(options={"task_id": task_id})
        for path, content in files.items():
            action = {"tool": "write_file", "args": {"path": path, "content": content}}
            _, _, _, _, info = game_env.step(action)
            assert "error" not in info, info
        _, _, terminated, _, info = game_env.step({"tool": "submit", "args": {}})
        assert terminated
        reward: RewardResult = info["reward"]
        return reward

    return run


def solution(env: GameEnv, task_id: str) -> dict[str, str]:
    folder = env.task_set.get(task_id).path / "solution"
    return {str(p.relative_to(folder)): p.read_text() for p in folder.rglob("*") if p.is_file()}
