"""``SandboxSpec.host_python``: the host's Python and its packages inside, read-only, and
nothing of taskgym's own data."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.local import LocalBackend, host_python_mounts

pytestmark = pytest.mark.sandbox


def test_the_host_interpreter_and_its_packages_are_the_sandbox_python(
        local_backend: LocalBackend) -> None:
    with local_backend.start(SandboxSpec(host_python=True)) as box:
        result = box.exec("python3 -c 'import sys, pydantic; print(sys.executable)'")
    assert result.exit_code == 0, result.stderr
    assert Path(result.stdout.strip()).resolve() == Path(sys.executable).resolve()


def test_the_host_installation_is_read_only_and_hides_taskgym(local_backend: LocalBackend) -> None:
    prefixes, hidden = host_python_mounts()
    checks = [f"touch {prefix}/taskgym-write-probe 2>/dev/null && echo WROTE {prefix}"
              for prefix in prefixes]
    checks += [f"find {path} -mindepth 1 | head -1" for path in hidden]
    with local_backend.start(SandboxSpec(host_python=True)) as box:
        result = box.exec("; ".join([*checks, "echo end"]))
    assert result.stdout.strip() == "end", result.stdout
    for prefix in prefixes:
        assert not (Path(prefix) / "taskgym-write-probe").exists()


def test_without_the_flag_only_the_system_python_is_there(local_backend: LocalBackend) -> None:
    with local_backend.start(SandboxSpec()) as box:
        result = box.exec("command -v python3; ls " + " ".join(host_python_mounts()[0]) + " 2>&1")
    assert result.stdout.splitlines()[0] == "/usr/bin/python3"
    assert "No such file" in result.stdout or not host_python_mounts()[0]
