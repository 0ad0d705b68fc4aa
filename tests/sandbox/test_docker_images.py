"""Image helpers that need no engine: the mirror from apt sources, folder hashes, pruning,
the image namespace, how the env images reach their Python."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from taskgym.errors import ConfigError, SandboxUnavailableError
from taskgym.paths import envs_dir
from taskgym.sandbox.docker.container import SHELL_PATH, configured_path
from taskgym.sandbox.docker.images import (
    NAMESPACE_VARIABLE,
    _prune,
    apt_mirror,
    base_images,
    env_ids_with_images,
    env_image,
    folder_hash,
    local_tag,
)


def test_mirror_from_one_line_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(
        "# comment\ndeb http://mirror.example/debian-security bookworm-security main\n"
        "deb [arch=amd64] http://mirror.example/debian bookworm main contrib\n")
    assert apt_mirror(tmp_path) == ("http://mirror.example/debian", "bookworm")


def test_mirror_from_deb822_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: trixie trixie-updates\n"
        "Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian-security\n"
        "Suites: trixie-security\nComponents: main\n")
    assert apt_mirror(tmp_path) == ("http://mirror.example/debian", "trixie")


def test_no_mirror_says_so(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    with pytest.raises(SandboxUnavailableError, match="no Debian mirror"):
        apt_mirror(tmp_path)


def test_folder_hash_follows_content_and_mode(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM taskgym/base\n")
    first = folder_hash(tmp_path)
    assert folder_hash(tmp_path) == first
    (tmp_path / "Dockerfile").chmod(0o600)
    second = folder_hash(tmp_path)
    assert second != first
    (tmp_path / "Dockerfile").write_text("FROM taskgym/base\nENV X=1\n")
    assert folder_hash(tmp_path) not in (first, second)


def test_prune_leaves_no_homes_secrets_or_accounts(tmp_path: Path) -> None:
    for folder in ("home/user", "root", "var/lib/dpkg", "etc", "usr/share/doc/x"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "etc" / "shadow").write_text("root:$6$secret\n")
    (tmp_path / "etc" / "passwd").write_text(
        "root:x:0:0::/root:/bin/bash\nbob:x:1001:1001::/home/bob:/bin/sh\n")
    _prune(tmp_path)
    for gone in ("home", "root", "var", "etc/shadow", "usr/share/doc"):
        assert not (tmp_path / gone).exists(), gone
    assert "bob" not in (tmp_path / "etc" / "passwd").read_text()
    assert "agent:x:1000:1000" in (tmp_path / "etc" / "passwd").read_text()
    assert (tmp_path / "app").is_dir() and (tmp_path / "tmp").stat().st_mode & 0o1777 == 0o1777


def test_an_interpreter_under_tmp_is_refused_for_the_host_python_image(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every container mounts its own empty /tmp, which would hide such a copy."""
    import taskgym.sandbox.docker.host_python_image as host_python_image
    from taskgym.sandbox.host.python_view import PythonView

    view = PythonView("/tmp/venv/bin/python3", ("/opt/python/lib", "/tmp/venv/bin"), ())
    monkeypatch.setattr(host_python_image, "python_view", lambda _executable: view)
    with pytest.raises(SandboxUnavailableError, match="lies under /tmp"):
        host_python_image.build_host_python(client=None, python=view.executable)


def test_the_configured_path_is_the_images_last_path_entry() -> None:
    assert configured_path(["LANG=C", "PATH=/opt/x/bin:/usr/bin"]) == "/opt/x/bin:/usr/bin"
    assert configured_path(["PATH=/a", "PATH=/b"]) == "/b"  # as the engine applies them
    for empty in ([], ["LANG=C"], ["PATH="], ["NOTPATH=/a"]):
        assert configured_path(empty) == SHELL_PATH


def test_image_tags_follow_the_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(NAMESPACE_VARIABLE, raising=False)
    assert local_tag("taskgym/host-python") == "taskgym/host-python"
    monkeypatch.setenv(NAMESPACE_VARIABLE, "me/venv-a")
    assert local_tag("taskgym/host-python") == "me/venv-a/host-python"
    assert local_tag(env_image("mesh-trimesh-v0")) == "me/venv-a/mesh-trimesh-v0"
    assert local_tag("debian:12") == "debian:12"  # not one of taskgym's
    monkeypatch.setenv(NAMESPACE_VARIABLE, "Not A Name")
    with pytest.raises(ConfigError, match=NAMESPACE_VARIABLE):
        local_tag("taskgym/base")


@pytest.mark.parametrize("env_id", env_ids_with_images())
def test_env_images_reach_python_through_the_images_path(env_id: str) -> None:
    """A venv's python3 started through a link in another folder does not find its pyvenv.cfg
    (nor its packages): no Dockerfile links it elsewhere, each starts from the namespace's
    images (the build argument), and the host-python image's PATH leads to it."""
    dockerfile = envs_dir() / env_id / "Dockerfile"
    text = dockerfile.read_text()
    assert not re.search(r"\bln\b[^\n]*python", text), f"{dockerfile} links python3 elsewhere"
    parents = base_images(dockerfile)
    assert parents in (["taskgym/base"], ["taskgym/host-python"]), parents
    assert re.search(r"(?m)^FROM \$\{TASKGYM_IMAGES\}/", text), f"{dockerfile}: FROM not namespaced"
