"""Every curated task and samples of every family: the oracle scores 1, doing nothing 0;
grading is deterministic; the tools answer and never raise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import taskgym
from taskgym.domains.game import FAMILIES, GameEnv
from taskgym.paths import envs_dir

from .conftest import solution

pytestmark = pytest.mark.sandbox

CURATED = sorted(p.name for p in (envs_dir() / "game-godot-v0" / "tasks").iterdir())


@pytest.fixture(scope="module")
def local_env() -> Any:
    env = taskgym.make("game-godot-v0").unwrapped
    yield env
    env.close()


def test_there_are_thirty_curated_tasks_of_five_kinds() -> None:
    assert len(CURATED) >= 30
    assert {name.rsplit("-", 1)[0] for name in CURATED} == set(FAMILIES)


@pytest.mark.parametrize("task_id", CURATED)
def test_curated_oracle_then_null(local_env: GameEnv, task_id: str,
                                  oracle_then_null: Callable[..., Any]) -> None:
    oracle_then_null(local_env, task_id=task_id)


@pytest.mark.parametrize("family", FAMILIES)
def test_generated_samples_oracle_then_null(family: str, oracle_then_null: Callable[..., Any]) -> None:
    env = taskgym.make("game-godot-v0", tasks=f"generated:{family}").unwrapped
    try:
        for seed in (0, 3):
            oracle_then_null(env, task_id=f"{family}-{seed}")
    finally:
        env.close()


@pytest.mark.parametrize("task_id", ["physics-104", "physics-101", "logic-102", "lighting-101"])
def test_grading_twice_gives_the_same_checks(local_env: GameEnv, task_id: str) -> None:
    """Physics, timers and input under --fixed-fps: the same details, twice, for a wrong and a
    right project."""
    play_details = []
    for _ in range(2):
        for files in ({}, solution(local_env, task_id)):
            local_env.reset(options={"task_id": task_id})
            for path, content in files.items():
                local_env.step({"tool": "write_file", "args": {"path": path, "content": content}})
            local_env.step({"tool": "submit", "args": {}})
            assert local_env.last_reward is not None
            play_details.append(local_env.last_reward.details.get("checks"))
    assert play_details[:2] == play_details[2:]


def edit(**fields: Any) -> dict[str, Any]:
    return {"tool": "edit_scene", "args": {"edits": [fields]}}


GARBAGE: list[Any] = [
    edit(action="add", parent=".", name="a/b", type="Spatial"),
    edit(action="set", node=".", property="transform", value=3),
    edit(action="add", parent=".", name="X", type="Reference"),
    {"tool": "edit_scene", "args": {"path": "/etc/passwd", "edits": [{"action": "remove", "node": "."}]}},
    {"tool": "edit_scene", "args": {"edits": [[1, 2]]}},
    {"tool": "edit_scene", "args": {"edits": [{"action": "connect", "node": ".", "signal": "nope",
                                               "target": ".", "method": "x"}]}},
    {"tool": "scene_tree", "args": {"path": "res://nope.tscn"}},
    {"tool": "scene_tree", "args": {"path": 5}},
    {"tool": "run_scene", "args": {"frames": -1}},
    {"tool": "run_scene", "args": {"inputs": [["a", 1]]}},
    {"tool": "write_script", "args": {"path": "../../x.gd", "code": ""}},
    {"tool": "attach_script", "args": {"node": "Nope", "script": "res://nope.gd"}},
    {"tool": "render", "args": {"path": "res://broken\"'.tscn"}},
    "not json", None, 7, {"tool": "edit_scene", "args": "{bad"},
]


def test_garbage_tool_arguments_are_errors_and_leave_the_scene_as_it_was(local_env: GameEnv) -> None:
    local_env.reset(options={"task_id": "scene-100"})
    before = local_env.session.read_file("main.tscn")
    for action in GARBAGE:
        _, reward, terminated, _, info = local_env.step(action)
        assert "error" in info and reward == 0.0 and not terminated, (action, info)
    assert local_env.session.read_file("main.tscn") == before


def test_the_tools_show_edit_run_and_draw_a_scene(local_env: GameEnv) -> None:
    local_env.reset(options={"task_id": "physics-104"})
    obs, *_ = local_env.step({"tool": "scene_tree", "args": {}})
    assert '"Platform"' in obs["text"] and "BoxShape" in obs["text"]
    edit = {"action": "add", "parent": "Crate", "name": "Shape", "type": "CollisionShape",
            "properties": {"shape": {"type": "BoxShape", "extents": [0.4, 0.4, 0.4]}}}
    obs, _, _, _, info = local_env.step({"tool": "edit_scene", "args": {"edits": [edit]}})
    assert "error" not in info, obs
    assert 'type="CollisionShape" parent="Crate"' in local_env.session.read_file("main.tscn").decode()
    obs, *_ = local_env.step({"tool": "run_scene", "args": {"frames": 240, "nodes": ["Crate"]}})
    assert '"linear_velocity": [0, 0, 0]' in obs["text"], obs["text"]  # it landed on the floor
    code = "extends Node\nfunc _ready():\n\tvar x = null\n\tx.foo()\n"
    local_env.step({"tool": "write_script", "args": {"path": "res://bad.gd", "code": code}})
    local_env.step({"tool": "attach_script", "args": {"node": "Crate", "script": "res://bad.gd"}})
    obs, *_ = local_env.step({"tool": "run_scene", "args": {"frames": 2}})
    assert "res://bad.gd:4" in obs["text"], obs["text"]
    _, _, _, _, info = local_env.step({"tool": "render", "args": {}})
    assert info["images"][0].startswith(b"\x89PNG"), info


def test_make_without_the_engine_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import taskgym.core.env_needs as env_needs

    monkeypatch.setattr(env_needs.shutil, "which", lambda name: None)  # the env's requires_programs
    with pytest.raises(taskgym.MissingDependencyError,
                       match="godot3-server on this host: sudo apt-get install godot3-server"):
        taskgym.make("game-godot-v0")
