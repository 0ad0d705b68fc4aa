"""Backends by name through the ``taskgym.backends`` entry-point group, as a third party's are."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

from taskgym.errors import ConfigError
from taskgym.sandbox import backends
from taskgym.sandbox.backends import ENTRY_POINT_GROUP, backend_class, installed_backends
from taskgym.sandbox.config import backend_config, get_backend
from taskgym.sandbox.unisolated import UnisolatedBackend, UnisolatedConfig


def _register(monkeypatch: pytest.MonkeyPatch, **named: str) -> None:
    points = [EntryPoint(name, value, ENTRY_POINT_GROUP) for name, value in named.items()]
    monkeypatch.setattr(backends, "entry_points", lambda group: [p for p in points if p.group == group])


def test_taskgyms_own_backends_are_registered_in_its_metadata() -> None:
    assert {"local", "docker", "unisolated"} <= set(installed_backends())


def test_a_name_resolves_to_the_registered_class_and_its_config(monkeypatch: pytest.MonkeyPatch) -> None:
    _register(monkeypatch, plain="taskgym.sandbox.unisolated:UnisolatedBackend")
    assert installed_backends() == ["plain"]
    assert backend_class("plain") is UnisolatedBackend
    with pytest.raises(ConfigError, match=r"named 'local' is installed \(installed: 'plain'\)"):
        backend_config("local")  # the set is what the group holds, nothing built in


def test_get_backend_makes_the_backend_from_its_config() -> None:
    backend = get_backend({"type": "unisolated"})
    assert isinstance(backend, UnisolatedBackend) and backend.config == UnisolatedConfig()
    assert backend_config("unisolated") == UnisolatedConfig()


@pytest.mark.parametrize("value, message", [
    ("taskgym.no_such_module:Backend", "cannot be imported"),
    ("taskgym.sandbox.unisolated:UnisolatedConfig", "is not a Backend class"),
])
def test_a_broken_registration_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, value: str,
                                                message: str) -> None:
    _register(monkeypatch, broken=value)
    with pytest.raises(ConfigError, match=f"the sandbox backend 'broken' \\({value}\\) {message}"):
        backend_class("broken")


def test_no_backend_installed_says_how_to_get_taskgyms_own(monkeypatch: pytest.MonkeyPatch) -> None:
    _register(monkeypatch)
    with pytest.raises(ConfigError, match=r"\(installed: none\).*reinstall taskgym"):
        backend_class("local")
