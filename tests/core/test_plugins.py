"""Envs come from the ``taskgym.envs`` entry-point group: taskgym's own and a third party's.

``fixtures/plugin-env`` is a separate package that adds ``example-word-v0`` without touching
taskgym; ``scripts/install.sh --test`` installs it with pip, so CI always runs these tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import gymnasium
import pytest

import taskgym
from taskgym.agents import make_agent
from taskgym.core import registry
from taskgym.errors import ConfigError

PLUGIN_DIST = "taskgym-example-plugin"
PLUGIN_ID = "example-word-v0"
BUILTIN = {"coding-terminal-v0", "cad-cadquery-v0", "finance-pdf-v0", "game-godot-v0",
           "mesh-trimesh-v0"}


def _plugin_installed() -> bool:
    try:
        metadata.distribution(PLUGIN_DIST)
    except metadata.PackageNotFoundError:
        return False
    return True


@pytest.fixture()
def plugin() -> str:
    if not _plugin_installed():
        message = f"{PLUGIN_DIST} is not installed: pip install ./fixtures/plugin-env"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return PLUGIN_ID


def test_builtin_envs_are_entry_points_of_taskgym_itself() -> None:
    ours = {ep.name: ep.value for ep in metadata.distribution("taskgym").entry_points
            if ep.group == registry.ENTRY_POINT_GROUP}
    assert set(ours) == BUILTIN
    assert ours["coding-terminal-v0"] == "taskgym.domains.coding:CodingEnv"
    assert BUILTIN <= set(taskgym.list_envs())


def test_the_registry_names_no_domain() -> None:
    source = Path(registry.__file__).read_text()
    for name in ("coding", "cadquery", "finance", "domains."):
        assert name not in source


def test_registering_an_id_twice_needs_override() -> None:
    env_id = "override-test-v0"
    registry.register(env_id, "taskgym.domains.coding:CodingEnv", "first")
    try:
        with pytest.raises(ConfigError, match="registered already.*override=True"):
            registry.register(env_id, "taskgym.domains.cad:CadEnv", "second")
        assert taskgym.list_envs()[env_id] == "first"
        registry.register(env_id, "taskgym.domains.cad:CadEnv", "second", override=True)
        assert taskgym.list_envs()[env_id] == "second"
        with pytest.raises(ConfigError, match="registered already"):
            registry.register("coding-terminal-v0", "taskgym.domains.cad:CadEnv", "hijack")
    finally:
        registry._REGISTRY.pop(env_id, None)
        gymnasium.registry.pop(f"taskgym/{env_id}", None)


def test_an_entry_point_must_name_module_and_class() -> None:
    with pytest.raises(ConfigError, match="module:Class"):
        registry.register("bad-entry-v0", "taskgym.domains.coding.CodingEnv")


def test_third_party_env_is_listed_and_made(plugin: str) -> None:
    assert plugin in taskgym.list_envs()
    out = subprocess.run([sys.executable, "-m", "taskgym", "list"], capture_output=True,
                         text=True, check=True).stdout
    assert plugin in out and "exact match decides" in out
    env = taskgym.make(plugin)
    try:
        scores = []
        for name in ("oracle", "null"):
            obs, info = env.reset(seed=0)
            agent = make_agent(name, env.unwrapped)
            done, reward = False, None
            while not done:
                obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
                done = terminated or truncated
            scores.append(reward)
        assert scores == [1.0, 0.0]
    finally:
        env.close()
