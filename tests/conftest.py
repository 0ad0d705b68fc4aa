"""Shared fixtures: the local backend, a private cache for generated tasks, task folders, and
the oracle-then-null check every env's tasks go through."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# every test session gets its own cache, so prepared workspaces and generated tasks are
# built by the code under test, not reused from an earlier run
os.environ.setdefault("TASKGYM_CACHE", tempfile.mkdtemp(prefix="taskgym-test-cache-"))

from taskgym import checks  # noqa: E402
from taskgym.evaluation import EpisodeRecord  # noqa: E402
from taskgym.sandbox import Backend  # noqa: E402
from taskgym.sandbox.local import LocalBackend  # noqa: E402

_PROBLEM = LocalBackend.check()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if any("docker" in item.keywords for item in items):
        problem = _docker_problem()
        if problem is not None:
            if os.environ.get("TASKGYM_REQUIRE_DOCKER"):
                raise pytest.UsageError(f"TASKGYM_REQUIRE_DOCKER is set but: {problem}")
            skip_docker = pytest.mark.skip(reason=f"no Docker engine here: {problem}")
            for item in items:
                if "docker" in item.keywords:
                    item.add_marker(skip_docker)
    if _PROBLEM is None:
        return
    if os.environ.get("TASKGYM_REQUIRE_SANDBOX"):
        raise pytest.UsageError(f"TASKGYM_REQUIRE_SANDBOX is set but: {_PROBLEM}")
    skip = pytest.mark.skip(reason=f"no local sandbox here: {_PROBLEM}")
    for item in items:
        if "sandbox" in item.keywords and "docker" not in item.keywords:
            item.add_marker(skip)


def _docker_problem() -> str | None:
    """Why docker tests cannot run here (engine, permissions, images), or ``None``."""
    from taskgym.sandbox.docker import DockerBackend

    problem = DockerBackend.check()
    if problem is None:
        import docker

        from taskgym.sandbox.docker.images import (
            BASE_IMAGE,
            env_ids_with_images,
            env_image,
            local_tag,
        )

        client = docker.from_env()
        try:
            have = {tag for image in client.images.list() for tag in image.tags}
        finally:
            client.close()
        wanted = [local_tag(BASE_IMAGE)] + [local_tag(env_image(e)) for e in env_ids_with_images()]
        missing = [tag for tag in wanted if f"{tag}:latest" not in have]
        if missing:
            problem = f"images {', '.join(missing)} are missing: run `taskgym images build`"
    return problem


@pytest.fixture(autouse=True)
def hacks_stay_graded(request: pytest.FixtureRequest,
                      monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """In every test marked ``hacks``: no episode an attack ended has no verdict (what the
    policy can cause is graded, docs/security.md), on whichever env the test plays."""
    if request.node.get_closest_marker("hacks") is None:
        yield
        return
    from taskgym.core.env_step import EnvStepping

    ended: list[tuple[Any, ...]] = []
    step_plan = EnvStepping.step_plan

    def recording(self: EnvStepping, action: Any) -> Any:
        result = yield from step_plan(self, action)
        info = result[4]
        if "verdict" in info:
            ended.append((info["verdict"], info.get("failure"), info.get("error")))
        return result

    monkeypatch.setattr(EnvStepping, "step_plan", recording)
    yield
    assert [end for end in ended if end[0] != "graded"] == []


@pytest.fixture(scope="session")
def local_backend() -> LocalBackend:
    if _PROBLEM is not None:
        pytest.skip(_PROBLEM)
    return LocalBackend()


@pytest.fixture(scope="session")
def docker_backend() -> Iterator[Backend]:
    from taskgym.sandbox.docker import DockerBackend

    backend = DockerBackend(pool_size=1)
    yield backend
    backend.close()


@pytest.fixture(scope="module", params=[pytest.param("local", marks=pytest.mark.sandbox),
                                        pytest.param("docker", marks=pytest.mark.docker)])
def backend(request: pytest.FixtureRequest) -> Backend:
    """Each sandbox backend in turn (tests that every backend must pass take this)."""
    found: Backend = request.getfixturevalue(f"{request.param}_backend")
    return found


def write_answer_task(folder: Path, solve: str = "echo 42 > /app/answer.txt\n",
                      max_steps: int = 8) -> Path:
    """A small task folder whose single hidden test wants 42 in /app/answer.txt."""
    (folder / "environment" / "files").mkdir(parents=True)
    (folder / "environment" / "files" / "notes.txt").write_text("the answer goes in answer.txt\n")
    (folder / "solution").mkdir()
    (folder / "solution" / "solve.sh").write_text("#!/bin/bash\nset -e\n" + solve)
    (folder / "tests").mkdir()
    (folder / "tests" / "test_x.py").write_text(
        "from pathlib import Path\n\n\ndef test_answer():\n"
        "    assert Path('/app/answer.txt').read_text().strip() == '42'\n")
    (folder / "instruction.md").write_text("Write 42 to /app/answer.txt.\n")
    (folder / "task.toml").write_text(
        f"[agent]\nmax_steps = {max_steps}\ntimeout_sec = 120\n[verifier]\ntimeout_sec = 60\n"
        "expected_tests = 1\n")
    return folder


@pytest.fixture()
def answer_task() -> Callable[..., Path]:
    """Makes small task folders (see :func:`write_answer_task`)."""
    return write_answer_task


def check_oracle_then_null(env: Any, **where: Any) -> EpisodeRecord:
    """Play one task (``task_id=`` or ``seed=``) with the oracle, which must succeed with
    score 1, then with the null agent, which must score 0 (``check_task_env``'s own check);
    return the oracle's record."""
    oracle, null, problems = checks.oracle_then_null(env, **where)
    assert problems == [], (problems, oracle, null)
    return oracle


@pytest.fixture()
def oracle_then_null() -> Callable[..., EpisodeRecord]:
    """:func:`check_oracle_then_null`, for test modules."""
    return check_oracle_then_null
