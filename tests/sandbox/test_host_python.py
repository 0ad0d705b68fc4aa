"""``SandboxSpec.host_python``: the host's Python and its packages inside, read-only, and
nothing of any taskgym installation, whatever lies where (a venv's base with taskgym, a user
site, an extra site folder, an editable checkout), also for a venv under /tmp."""

from __future__ import annotations

import compileall
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from taskgym.paths import envs_dir
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.host.python_view import (
    PythonView,
    host_python_view,
    packages_installed_at,
    python_view,
)
from taskgym.sandbox.local import LocalBackend

pytestmark = pytest.mark.sandbox

SRC = Path(__file__).resolve().parents[2] / "src"
PLANTED = {"cad-cadquery-v0": ("angle-block", "spur-gear"), "finance-pdf-v0": ("co0-01-lookup",)}
"""Task folders copied (without their documents) into the installations a layout plants."""
VERSION = f"python{sys.version_info.major}.{sys.version_info.minor}"

_PROBE = r"""
import json, sys
from pathlib import Path
from taskgym.core.hidden import find_hidden, hidden_files
from taskgym.core.task import FolderTaskSet
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.host.python_view import host_python_view
from taskgym.sandbox.local import LocalBackend
roots, imports = json.loads(sys.argv[1]), sys.argv[2]
files, _ = hidden_files([t for root in roots for t in FolderTaskSet(Path(root), "probe")])
with LocalBackend().start(SandboxSpec(host_python=True)) as box:
    found = find_hidden(box, files)
    run = box.exec(f"python3 -c 'import sys, {imports}; print(sys.prefix)'")
view = host_python_view()
print(json.dumps({"searched": len(files), "found": found, "binds": view.binds,
                  "python": [run.exit_code, run.stdout.strip(), run.stderr[-2000:]]}))
"""


def test_the_host_interpreter_and_its_packages_are_the_sandbox_python(
        local_backend: LocalBackend) -> None:
    with local_backend.start(SandboxSpec(host_python=True)) as box:
        result = box.exec("python3 -c 'import sys, pydantic; print(sys.executable)'")
    assert result.exit_code == 0, result.stderr
    assert Path(result.stdout.strip()).resolve() == Path(sys.executable).resolve()


def test_the_view_is_read_only_and_its_hidden_folders_empty(local_backend: LocalBackend) -> None:
    view = host_python_view()
    assert view.hidden, "this machine has taskgym installed in site-packages: it must be hidden"
    folders = [path for path in view.binds if Path(path).is_dir()]
    checks = [f"touch {path}/taskgym-write-probe 2>/dev/null && echo WROTE {path}" for path in folders]
    checks += [f"find {path} -mindepth 1 | head -1" for path in view.hidden]
    with local_backend.start(SandboxSpec(host_python=True)) as box:
        result = box.exec("; ".join([*checks, "echo end"]))
    assert result.stdout.strip() == "end", result.stdout
    for path in folders:
        assert not (Path(path) / "taskgym-write-probe").exists()


def test_only_the_interpreter_is_shown_not_its_whole_installation(
        local_backend: LocalBackend) -> None:
    prefix = Path(sys.base_prefix).resolve()
    with local_backend.start(SandboxSpec(host_python=True)) as box:
        listing = box.exec(f"ls -A {prefix}").stdout.split()
        checkout = Path(__file__).resolve().parents[2]  # this test's own checkout
        seen = box.exec(f"ls {checkout} 2>&1").stdout
    assert set(listing) <= {"bin", "lib"}, listing  # no include/, share/, src/ checkouts
    assert "lib" in listing and "No such file" in seen, seen  # no checkout, no worktree


def test_without_the_flag_only_the_system_python_is_there(local_backend: LocalBackend) -> None:
    with local_backend.start(SandboxSpec()) as box:
        result = box.exec("command -v python3; ls " + " ".join(host_python_view().binds) + " 2>&1")
    assert result.stdout.splitlines()[0] == "/usr/bin/python3"
    assert result.stdout.count("No such file") == len(host_python_view().binds)


# -- real layouts that leaked (each a venv under /tmp: the sandbox's own /tmp must not hide it)
def _plant_taskgym(site: Path) -> Path:
    """A copy of taskgym's package with a few task folders, as an installation has it."""
    package = site / "taskgym"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text('"""a stray copy of taskgym"""\n')
    (package / "core" / "task.py").write_text("TASK = 'copy'\n")
    for env_id, task_ids in PLANTED.items():
        for task_id in task_ids:
            source = envs_dir() / env_id / "tasks" / task_id
            dest = package / "envs" / env_id / "tasks" / task_id
            shutil.copytree(source, dest, ignore=shutil.ignore_patterns("environment"))
    compileall.compile_dir(str(package), quiet=1)  # __pycache__ copies, as pip leaves them
    (site / "taskgym-0.1.0.dist-info").mkdir()
    (site / "taskgym-0.1.0.dist-info" / "RECORD").write_text("taskgym/__init__.py,,\n")
    return package / "envs"


def _task_roots(envs: Path) -> list[str]:
    return [str(envs / env_id / "tasks") for env_id in PLANTED]


def _layout(kind: str, venv: Path) -> tuple[list[str], dict[str, str], str]:
    """Build ``kind`` around ``venv``: task roots to search for, extra environment, imports."""
    site = venv / "lib" / VERSION / "site-packages"
    env: dict[str, str] = {}
    if kind == "base-has-taskgym":  # this machine's own layout: the base holds an install
        base_envs = Path(sysconfig.get_paths()["purelib"]) / "taskgym" / "envs"
        if not (base_envs / "cad-cadquery-v0").is_dir():
            pytest.skip(f"the base interpreter has no taskgym installed ({base_envs})")
        return _task_roots(base_envs), env, "pydantic"
    if kind == "user-site":  # a user base inside the prefix, as with --prefix=~/.local builds
        env["PYTHONUSERBASE"] = str(venv / "lib" / "userbase")
        envs = _plant_taskgym(venv / "lib" / "userbase" / "lib" / VERSION / "site-packages")
        return _task_roots(envs), env, "pydantic"
    if kind == "extra-site":  # a .pth adds a folder holding another copy and a vendored task
        extra = venv / "extra"
        extra.mkdir()
        (extra / "extra_module.py").write_text("X = 1\n")
        (site / "extra.pth").write_text(f"{extra}\n")
        envs = _plant_taskgym(extra)
        vendored = extra / "vendored" / "tasks"
        shutil.copytree(envs / "cad-cadquery-v0" / "tasks", vendored / "cad-cadquery-v0" / "tasks")
        return [*_task_roots(envs), str(vendored / "cad-cadquery-v0" / "tasks")], env, "extra_module"
    assert kind == "editable"  # pip install -e of a checkout kept in the venv (<venv>/src/<name>)
    checkout = venv / "src" / "taskgym"
    (checkout / "src").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text('[project]\nname = "taskgym"\nversion = "0.1.0"\n')
    envs = _plant_taskgym(checkout / "src")
    shutil.move(str(envs), str(checkout / "envs"))
    (checkout / "tests").mkdir()
    shutil.copytree(checkout / "envs" / "cad-cadquery-v0" / "tasks",
                    checkout / "tests" / "fixtures" / "tasks")
    (site / "_editable_impl_taskgym.pth").write_text(f"{checkout / 'src'}\n")
    return [*_task_roots(checkout / "envs"), str(checkout / "tests" / "fixtures" / "tasks")], env, \
        "pydantic"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["base-has-taskgym", "user-site", "extra-site", "editable"])
def test_no_taskgym_installation_is_visible_from_a_venv_under_tmp(
        local_backend: LocalBackend, tmp_path: Path, kind: str) -> None:
    venv = tmp_path / "venv"
    assert str(venv).startswith("/tmp/"), "the layout must lie under /tmp"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages",
                    str(venv)], check=True)
    roots, env, imports = _layout(kind, venv)
    environ = {**os.environ, "PYTHONPATH": str(SRC), **env}
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", _PROBE, json.dumps(roots), imports],
                           capture_output=True, text=True, env=environ, timeout=900)
    assert probe.returncode == 0, probe.stderr[-3000:]
    report = json.loads(probe.stdout)
    assert report["searched"] >= 6, report
    assert report["found"] == [], report["found"]
    code, prefix, err = report["python"]
    assert code == 0 and prefix == str(venv), (code, prefix, err)  # the venv's own python3


def test_an_interpreter_inside_the_workspace_is_refused(
        local_backend: LocalBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    from taskgym.errors import ConfigError

    monkeypatch.setattr("taskgym.sandbox.local.command_line.host_python_view",
                        lambda: PythonView("/app/venv/bin/python3", ("/app/venv",), ()))
    with pytest.raises(ConfigError, match="keeps for itself"):
        local_backend.argv(SandboxSpec(host_python=True), 0, 0, 0, (0, 0))


def test_a_venvs_view_leaves_out_its_bases_packages(tmp_path: Path) -> None:
    """A venv does not import from its base's site-packages: they stay out of its view (and of
    the host-python image packed from it, gigabytes when the base has the extras too)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    view = python_view(str(venv / "bin" / "python3"))
    own = os.path.realpath(venv / "lib" / VERSION / "site-packages")
    assert view.packages == (own,), view.packages
    stdlib = os.path.realpath(sysconfig.get_paths(vars={"installed_base": sys.base_prefix})[
        "stdlib"])
    base_site = os.path.join(stdlib, "site-packages")
    if not (os.path.isdir(base_site) and any(p == stdlib or stdlib.startswith(p + "/")
                                             for p in view.binds)):
        pytest.skip(f"the base's stdlib ({stdlib}) is not shown from outside /usr here")
    assert base_site in view.hidden, (view.binds, view.hidden)


def test_packages_are_dated_by_the_newest_distribution_but_taskgym(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    for name, when in (("alpha-1.0.dist-info", 100), ("beta-2.0.dist-info", 200),
                       ("gamma-0.1-py3.11.egg-info", 150), ("taskgym-0.1.0.dist-info", 900)):
        (site / name).mkdir(parents=True)
        os.utime(site / name, (when, when))
    (site / "loose_module.py").write_text("")
    os.utime(site / "loose_module.py", (800, 800))  # not a distribution's record
    view = PythonView("/x/bin/python3", (str(site),), (), (str(site), str(tmp_path / "gone")))
    assert packages_installed_at(view) == 200
    assert packages_installed_at(PythonView("/x/bin/python3", (), ())) == 0
