"""Backend configs: one frozen model per backend, chosen by ``type`` (the backend's name in the
``taskgym.backends`` entry-point group)."""

from __future__ import annotations

import os

import pytest

import taskgym
from taskgym.errors import ConfigError
from taskgym.sandbox import DockerConfig, LocalConfig, backend_config
from taskgym.sandbox.config import whole_number_env
from taskgym.sandbox.snapshots import spares, store


def test_names_and_mappings_become_configs(monkeypatch: pytest.MonkeyPatch) -> None:
    assert backend_config("local") == LocalConfig()
    monkeypatch.setenv("TASKGYM_DOCKER_POOL", "5")
    assert backend_config("docker") == DockerConfig(pool_size=5)  # the variable is a default only
    assert backend_config({"type": "docker", "pool_size": 0}).pool_size == 0  # type: ignore[union-attr]
    config = DockerConfig(pool_size=3)
    assert backend_config(config) is config


@pytest.mark.parametrize("choice, message", [
    ("nope", "no sandbox backend named 'nope' is installed (installed: 'docker', 'local', 'unisolated')"),
    ("lokal", "Did you mean 'local'?"),
    ({"type": "docker", "pool": 2}, "pool: Extra inputs are not permitted"),
    ({"type": "docker", "pool_size": -1}, "pool_size: Input should be greater than or equal to 0"),
    ({"type": "vm"}, "no sandbox backend named 'vm' is installed"),
    ({"pool_size": 2}, "a sandbox config needs its backend's name as 'type'"),
    (3, "sandbox must be a backend name (docker, local, unisolated), a config or a Backend, not int"),
])
def test_bad_choices_say_what_is_accepted(choice: object, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        backend_config(choice)  # type: ignore[arg-type]
    assert message in str(info.value)


_COUNTS = {  # each whole-number variable: what reads it, its minimum, what its message adds
    "TASKGYM_DOCKER_POOL": (lambda: DockerConfig().pool_size, 0, "0 starts each container"),
    "TASKGYM_WARM_GRADERS": (lambda: LocalConfig().warm_graders, 0, "0 turns warm graders off"),
    "TASKGYM_SNAPSHOT_MEMORY_BYTES": (store.memory_budget, 0,
                                      "bytes; 0 keeps snapshots on the runtime root"),
    "TASKGYM_FORK_SPARES": (spares.max_spares, 0, "0 turns spares off"),
    "TASKGYM_TEST_COUNT": (lambda: whole_number_env("TASKGYM_TEST_COUNT", 7, minimum=1), 1, ""),
}


@pytest.mark.parametrize("name", sorted(_COUNTS))
def test_a_bad_count_variable_is_a_clear_error(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    read, minimum, hint = _COUNTS[name]
    monkeypatch.setenv(name, str(minimum))
    assert read() == minimum
    for bad in ("many", str(minimum - 1), "2.5", ""):
        monkeypatch.setenv(name, bad)
        with pytest.raises(ConfigError, match=f"{name} must be a whole number >= {minimum}, "
                                              f"not {bad!r}") as info:
            read()
        assert hint in str(info.value)
    monkeypatch.delenv(name)
    assert read() > 0  # the default


def test_configs_are_frozen_and_hashable() -> None:
    config = DockerConfig(pool_size=1)
    with pytest.raises(ValueError):
        config.pool_size = 2  # type: ignore[misc]
    assert {config: 1}[DockerConfig(pool_size=1)] == 1


def test_make_refuses_an_unknown_backend_at_once() -> None:
    with pytest.raises(ConfigError, match="no sandbox backend named 'nope' is installed"):
        taskgym.make("coding-terminal-v0", sandbox="nope")


def test_warm_graders_come_from_the_config_and_the_variable_is_a_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TASKGYM_WARM_GRADERS", raising=False)
    cpus = len(os.sched_getaffinity(0))
    assert LocalConfig().warm_graders == DockerConfig().warm_graders == max(1, cpus)
    monkeypatch.setenv("TASKGYM_WARM_GRADERS", "5")
    assert LocalConfig().warm_graders == 5
    assert backend_config({"type": "docker", "warm_graders": 0}).warm_graders == 0
    assert backend_config({"type": "local", "warm_idle_sec": 2.5}).warm_idle_sec == 2.5
    monkeypatch.setenv("TASKGYM_WARM_GRADERS", "lots")
    with pytest.raises(ConfigError, match="TASKGYM_WARM_GRADERS must be a whole number"):
        LocalConfig()


def test_the_grader_zygote_comes_from_the_config_and_the_variable_is_a_default(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TASKGYM_GRADER_ZYGOTE", raising=False)
    assert LocalConfig().grader_zygote is True
    assert backend_config({"type": "local", "grader_zygote": False}).grader_zygote is False  # type: ignore[union-attr]
    monkeypatch.setenv("TASKGYM_GRADER_ZYGOTE", "0")
    assert LocalConfig().grader_zygote is False
    assert LocalConfig(grader_zygote=True).grader_zygote is True  # the field wins over the default
    monkeypatch.setenv("TASKGYM_GRADER_ZYGOTE", "off")
    with pytest.raises(ConfigError, match="TASKGYM_GRADER_ZYGOTE must be 0 or 1"):
        LocalConfig()
    with pytest.raises(ConfigError, match="grader_zygote: Extra inputs are not permitted"):
        backend_config({"type": "docker", "grader_zygote": False})  # a local-backend path


@pytest.mark.parametrize("choice, message", [
    ({"type": "local", "warm_graders": -1}, "warm_graders: Input should be greater than or equal to 0"),
    ({"type": "docker", "warm_idle_sec": 0}, "warm_idle_sec: Input should be greater than 0"),
])
def test_bad_warm_grader_settings_say_what_is_accepted(choice: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        backend_config(choice)  # type: ignore[arg-type]


@pytest.mark.sandbox
def test_a_local_config_makes_a_backend_with_its_warm_grader_settings() -> None:
    from taskgym.sandbox import get_backend

    backend = get_backend(LocalConfig(warm_graders=3, warm_idle_sec=7.0))
    assert (backend.warm_graders, backend.warm_idle_sec) == (3, 7.0)
    assert backend.grader_zygote is LocalConfig().grader_zygote  # type: ignore[attr-defined]
    assert get_backend(LocalConfig(grader_zygote=False)).grader_zygote is False  # type: ignore[attr-defined]
    assert get_backend(LocalConfig(warm_graders=3, warm_idle_sec=7.0)) is backend  # shared
    assert get_backend(LocalConfig(warm_graders=1)) is not backend
