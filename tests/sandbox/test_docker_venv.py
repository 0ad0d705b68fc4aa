"""The docker backend for a Python in a venv: the host-python image packed from a venv holds
its packages, env images built on it import them (a link to its python3 elsewhere would not),
sessions run it, and its labels tell doctor which interpreter it was packed from and when.
In a namespace of its own (the base tagged into it), so the shared images stay as they are.
The whole path (a venv with taskgym and its extras, every env's image, the oracle on docker)
is scripts/test_docker_venv.sh, which CI runs."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgym.errors import SandboxUnavailableError
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.docker import DockerBackend
from taskgym.sandbox.docker.host_python_image import build_host_python, host_python_mismatch
from taskgym.sandbox.docker.images import NAMESPACE_ARG, NAMESPACE_VARIABLE, docker_build

pytestmark = pytest.mark.docker

@pytest.fixture()
def namespace(docker_backend: DockerBackend, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"taskgym-test-venv-{os.getpid()}"
    client = docker_backend.client
    client.images.get("taskgym/base").tag(f"{name}/base")
    monkeypatch.setenv(NAMESPACE_VARIABLE, name)
    yield name
    for image in client.images.list():
        for tag in image.tags:
            if tag.startswith(f"{name}/"):
                with contextlib.suppress(Exception):
                    client.images.remove(tag, force=True)


@pytest.fixture(params=["this", "system"])
def venv(request: pytest.FixtureRequest) -> Iterator[Path]:
    """A venv outside /tmp (which containers cover) with one package of its own, made from
    the interpreter running the tests (its files packed into the image) or from the system's
    /usr/bin/python3 (the image's own /usr, from the same Debian suite)."""
    base = sys.executable if request.param == "this" else "/usr/bin/python3"
    if not os.path.isfile(base):
        pytest.skip(f"no {base} here")
    folder = Path(tempfile.mkdtemp(prefix="taskgym-venv-", dir="/var/tmp"))
    folder.chmod(0o755)
    try:
        subprocess.run([base, "-m", "venv", "--without-pip", str(folder)], check=True)
        site, = (folder / "lib").glob("python3*/site-packages")
        (site / "venvprobe").mkdir()
        (site / "venvprobe" / "__init__.py").write_text("WHERE = 'the venv'\n")
        (site / "venvprobe-1.0.dist-info").mkdir()
        (site / "venvprobe-1.0.dist-info" / "METADATA").write_text(
            "Metadata-Version: 2.1\nName: venvprobe\nVersion: 1.0\n")
        yield folder
    finally:
        shutil.rmtree(folder)


def test_a_venvs_image_reaches_its_packages(docker_backend: DockerBackend, namespace: str,
                                            venv: Path, tmp_path: Path) -> None:
    client = docker_backend.client
    python = str(venv / "bin" / "python3")
    tag = build_host_python(client, python, log=lambda *_: None)
    assert tag == f"{namespace}/host-python"

    env = tmp_path / "env"
    env.mkdir()
    (env / "Dockerfile").write_text(  # as envs/cad-cadquery-v0/Dockerfile does
        "ARG TASKGYM_IMAGES=taskgym\nFROM ${TASKGYM_IMAGES}/host-python\n"
        "RUN python3 -c 'import venvprobe'\n")
    docker_build(client, env, f"{namespace}/probe-env", {NAMESPACE_ARG: namespace})
    (env / "Dockerfile").write_text(  # the link the env Dockerfiles made before
        "ARG TASKGYM_IMAGES=taskgym\nFROM ${TASKGYM_IMAGES}/host-python\n"
        'RUN ln -sf "$(command -v python3)" /usr/local/bin/python3 '
        "&& /usr/local/bin/python3 -c 'import venvprobe'\n")
    with pytest.raises(SandboxUnavailableError, match="No module named 'venvprobe'"):
        docker_build(client, env, f"{namespace}/probe-link", {NAMESPACE_ARG: namespace})

    backend = DockerBackend(pool_size=0)
    try:
        for spec in (SandboxSpec(host_python=True), SandboxSpec(image=f"{namespace}/probe-env")):
            with backend.start(spec) as box:
                run = box.exec("python3 -c 'import sys, venvprobe; print(sys.prefix, "
                               "venvprobe.WHERE)'")
            assert run.exit_code == 0 and run.stdout.strip() == f"{venv} the venv", run
    finally:
        backend.close()

    assert host_python_mismatch(client, python) is None
    other = host_python_mismatch(client, sys.executable)
    assert other is not None and f"packed from {python}" in other, other
    later = next((venv / "lib").glob("python3*/site-packages")) / "newer-1.0.dist-info"
    later.mkdir()
    os.utime(later, (time.time() + 60, time.time() + 60))  # installed after the image
    stale = host_python_mismatch(client, python)
    assert stale is not None and "installed" in stale, stale
