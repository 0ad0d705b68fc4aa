"""No hidden task material is readable inside the agent's sandbox of any env, on either
backend: the whole sandbox filesystem is searched for every curated task's tests, references,
answers and oracle solutions (and their compiled forms). On this machine taskgym is installed
editable, so the base interpreter's site-packages holds a copy of ``envs/`` and checkouts
with ``envs/`` lie on disk (/work/main, worktrees): none of it may show."""

from __future__ import annotations

import py_compile
from pathlib import Path

import pytest

import taskgym
from taskgym.core.hidden import find_hidden, hidden_files
from taskgym.core.task import FolderTaskSet, Task
from taskgym.paths import envs_dir
from taskgym.sandbox import Backend, SandboxSpec

ENV_IDS = sorted(env_id for env_id in taskgym.list_envs() if (envs_dir() / env_id / "tasks").is_dir())
DOCKER_ENV_IDS = ["cad-cadquery-v0", "coding-terminal-v0"]
"""On docker, one env on the base image and one on the host-python image, which every other
env with an image builds on (the search reads gigabytes each time)."""


def _curated() -> list[Task]:
    return [task for env_id in ENV_IDS for task in FolderTaskSet(envs_dir() / env_id / "tasks", env_id)]


def _search_env(backend: Backend, env_id: str) -> None:
    files, skipped = hidden_files(_curated())
    # skipped: tiny files and copies of what the agent is shown anyway (pristine test inputs)
    assert len(files) > 100 and len(skipped) < len(files) // 4, (len(files), skipped)
    env = taskgym.make(env_id, sandbox=backend)
    try:
        first = FolderTaskSet(envs_dir() / env_id / "tasks", env_id).ids()[0]
        env.reset(options={"task_id": first})
        found = find_hidden(env.unwrapped.session, files)  # type: ignore[attr-defined]
    finally:
        env.close()
    assert found == [], found


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_the_agents_sandbox_holds_no_hidden_task_file(local_backend: Backend, env_id: str) -> None:
    _search_env(local_backend, env_id)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize("env_id", DOCKER_ENV_IDS)
def test_no_hidden_task_file_in_a_container(docker_backend: Backend, env_id: str) -> None:
    _search_env(docker_backend, env_id)


@pytest.mark.slow
def test_the_search_finds_copies_anywhere(backend: Backend, tmp_path: Path) -> None:
    """A copy in the workspace, one in /tmp and a compiled copy elsewhere are all found."""
    tasks = [t for t in _curated() if t.id in ("angle-block", "co0-01-lookup")]
    files, _ = hidden_files(tasks)
    reference = (tasks[0].path / "tests" / "reference.py").read_bytes()
    compiled = tmp_path / "reference.pyc"
    (tmp_path / "src.py").write_bytes(reference)
    py_compile.compile(str(tmp_path / "src.py"), cfile=str(compiled), doraise=True)
    answer = (tasks[1].path / "tests" / "answer.json").read_bytes()
    with backend.start(SandboxSpec(host_python=True)) as box:
        box.write_file("deep/er/copy.py", b"# padding\n" + reference + b"# more\n")
        box.write_file("stash.bin", compiled.read_bytes())
        box.exec("mv stash.bin /tmp/x.pyc")
        box.write_file("a.json", answer)
        box.exec("mkdir -p /tmp/n && mv a.json /tmp/n/")
        found = find_hidden(box, files)
    paths = {path for _, path in found}
    assert {"/app/deep/er/copy.py", "/tmp/x.pyc", "/tmp/n/a.json"} <= paths, found
    assert ("angle-block:tests/reference.py", "/tmp/x.pyc") in found, found


@pytest.mark.slow
@pytest.mark.sandbox
def test_the_search_finds_the_copy_the_old_mounts_exposed(local_backend: Backend) -> None:
    """Binding the base interpreter's site-packages whole (as before) showed its copy of
    taskgym's envs/: the search finds every CAD reference and solution there, and their
    compiled copies."""
    import sysconfig

    copy = Path(sysconfig.get_paths()["purelib"]) / "taskgym"
    if not (copy / "envs" / "cad-cadquery-v0").is_dir():
        pytest.skip(f"the base interpreter has no taskgym installed ({copy})")
    files, _ = hidden_files(FolderTaskSet(copy / "envs" / "cad-cadquery-v0" / "tasks", "cad"))
    with local_backend.start(SandboxSpec(ro_binds={str(copy): "/opt/old/taskgym"})) as box:
        found = find_hidden(box, files)
    assert {name for name, _ in found} == {f.name for f in files}
    assert any(path.endswith(".pyc") for _, path in found), found[:5]
