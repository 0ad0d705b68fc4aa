"""Shared fixtures: the local backend, and a private cache for generated tasks."""

from __future__ import annotations

import os
import tempfile

import pytest

# every test session gets its own cache, so prepared workspaces and generated tasks are
# built by the code under test, not reused from an earlier run
os.environ.setdefault("TASKGYM_CACHE", tempfile.mkdtemp(prefix="taskgym-test-cache-"))

from taskgym.sandbox.local import LocalBackend  # noqa: E402

_PROBLEM = LocalBackend.check()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _PROBLEM is None:
        return
    if os.environ.get("TASKGYM_REQUIRE_SANDBOX"):
        raise pytest.UsageError(f"TASKGYM_REQUIRE_SANDBOX is set but: {_PROBLEM}")
    skip = pytest.mark.skip(reason=f"no local sandbox here: {_PROBLEM}")
    for item in items:
        if "sandbox" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def local_backend() -> LocalBackend:
    if _PROBLEM is not None:
        pytest.skip(_PROBLEM)
    return LocalBackend()
