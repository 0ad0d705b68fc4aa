"""``taskgym images build`` without an engine: a failed image names its env and cause and the
others still build; the host-python image is renewed when made from another Python or before a
package installed since (its labels), and doctor says so."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import taskgym.sandbox.docker.host_python_image as host_python_image
import taskgym.sandbox.docker.image_set as image_set
from taskgym.errors import SandboxUnavailableError
from taskgym.sandbox.docker.host_python_image import (
    PACKAGES_LABEL,
    PYTHON_LABEL,
    host_python_mismatch,
)
from taskgym.sandbox.host.python_view import PythonView


class FakeImages:
    """The engine's image store, as much of it as the code reads: labels by tag."""

    def __init__(self, labels: dict[str, dict[str, str]]) -> None:
        self.labels = labels

    def get(self, tag: str) -> Any:
        import docker.errors

        if tag not in self.labels:
            raise docker.errors.ImageNotFound(tag)
        return SimpleNamespace(labels=self.labels[tag])


def fake_client(labels: dict[str, dict[str, str]]) -> Any:
    return SimpleNamespace(images=FakeImages(labels))


@pytest.fixture()
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Builds recorded instead of run; cad-cadquery-v0's fails."""
    built: list[str] = []

    def env_build(client: Any, env_id: str, log: Any = print) -> str:
        if env_id == "cad-cadquery-v0":
            raise SandboxUnavailableError("building taskgym/cad-cadquery-v0 failed: "
                                          "ModuleNotFoundError: No module named 'cadquery'")
        built.append(env_id)
        return env_id

    monkeypatch.delenv("TASKGYM_IMAGE_NAMESPACE", raising=False)
    monkeypatch.setattr(image_set, "build_base", lambda client, force, log: built.append("base"))
    monkeypatch.setattr(image_set, "build_host_python",
                        lambda client, python, log: built.append("host-python"))
    monkeypatch.setattr(image_set, "build_env_image", env_build)
    monkeypatch.setattr(image_set, "host_python_mismatch", lambda client, python: None)
    return built


def test_a_failed_image_names_its_env_and_cause_and_the_others_build(
        recorded: list[str]) -> None:
    targets = image_set.image_targets(None)
    assert targets[:2] == ["base", "host-python"] and "cad-cadquery-v0" in targets
    outcomes = list(image_set.build_images(fake_client({}), targets, log=lambda _line: None))
    failed = {o.target: o.error for o in outcomes if o.error}
    assert list(failed) == ["cad-cadquery-v0"], failed
    assert "No module named 'cadquery'" in str(failed["cad-cadquery-v0"])
    assert outcomes[-1].target == targets[-1]  # the images after it were built too
    assert recorded == [t for t in targets if t != "cad-cadquery-v0"]


def test_an_image_whose_parent_failed_is_not_built(recorded: list[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    def no_python(client: Any, python: str | None, log: Any) -> str:
        raise SandboxUnavailableError("the Python running taskgym lies under /tmp")

    monkeypatch.setattr(image_set, "build_host_python", no_python)
    outcomes = list(image_set.build_images(fake_client({}), image_set.image_targets(None),
                                           log=lambda _line: None))
    failed = {o.target: o.error or "" for o in outcomes if o.error}
    assert "lies under /tmp" in failed.pop("host-python")
    assert "coding-terminal-v0" not in failed  # it starts from the base
    assert failed and all("host-python, which it starts from, failed" in e for e in failed.values())
    assert recorded == ["base", "coding-terminal-v0"]


def test_the_cli_goes_on_after_a_failure_and_exits_non_zero(
        recorded: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    import docker

    from taskgym.cli.main import main
    from taskgym.sandbox.docker import DockerBackend

    monkeypatch.setattr(DockerBackend, "check", staticmethod(lambda: None))
    monkeypatch.setattr(docker, "from_env", lambda **_kw: fake_client({}))
    assert main(["images", "build"]) == 1
    out, err = capsys.readouterr()
    assert "FAILED taskgym/cad-cadquery-v0" in err and "No module named 'cadquery'" in err
    assert "1 failed" in out and "mesh-trimesh-v0" in recorded


@pytest.fixture()
def view(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TASKGYM_IMAGE_NAMESPACE", raising=False)
    monkeypatch.setattr(host_python_image, "python_view",
                        lambda executable: PythonView(executable, (), ()))
    monkeypatch.setattr(host_python_image, "packages_installed_at", lambda _view: 1000.0)


@pytest.mark.usefixtures("view")
@pytest.mark.parametrize(("labels", "expected"), [
    ({PYTHON_LABEL: sys.executable, PACKAGES_LABEL: "1000"}, None),
    ({PYTHON_LABEL: sys.executable, PACKAGES_LABEL: "2000"}, None),
    ({PYTHON_LABEL: "/opt/other/bin/python3", PACKAGES_LABEL: "2000"},
     "packed from /opt/other/bin/python3"),
    ({PYTHON_LABEL: sys.executable, PACKAGES_LABEL: "500"}, "packages were installed"),
    ({}, "records no interpreter"),
])
def test_the_host_python_image_is_compared_with_the_running_python(
        labels: dict[str, str], expected: str | None) -> None:
    found = host_python_mismatch(fake_client({"taskgym/host-python": labels}))
    if expected is None:
        assert found is None
    else:
        assert found is not None and expected in found, found


@pytest.mark.usefixtures("view")
def test_no_host_python_image_is_no_mismatch() -> None:
    assert host_python_mismatch(fake_client({})) is None


def test_a_mismatched_host_python_image_is_renewed(recorded: list[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    client = fake_client({"taskgym/base": {}, "taskgym/host-python": {}})
    monkeypatch.setattr(image_set, "image_exists", lambda _client, tag: True)
    list(image_set.build_images(client, ["host-python"], log=lambda _line: None))
    assert recorded == []  # present and current
    monkeypatch.setattr(image_set, "host_python_mismatch", lambda client, python: "packed from x")
    lines: list[str] = []
    list(image_set.build_images(client, ["host-python"], log=lines.append))
    assert recorded == ["host-python"] and "packed from x" in lines[0]


@pytest.mark.usefixtures("view")
def test_another_name_of_the_same_interpreter_matches(tmp_path: Path) -> None:
    """``python`` and ``python3`` of one venv are one interpreter; its base's is another."""
    (tmp_path / "base" / "bin").mkdir(parents=True)
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    real = tmp_path / "base" / "bin" / "python3.11"
    real.write_text("")
    (tmp_path / "venv" / "bin" / "python3").symlink_to(real)
    (tmp_path / "venv" / "bin" / "python").symlink_to("python3")
    client = fake_client({"taskgym/host-python": {PYTHON_LABEL: str(tmp_path / "venv/bin/python3"),
                                                  PACKAGES_LABEL: "2000"}})
    assert host_python_mismatch(client, str(tmp_path / "venv" / "bin" / "python")) is None
    assert host_python_mismatch(client, str(real)) is not None
