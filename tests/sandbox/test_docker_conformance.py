"""Every conformance check, on the docker backend."""

from __future__ import annotations

import pytest

from taskgym.sandbox import Backend
from taskgym.sandbox.conformance import CHECKS

pytestmark = [pytest.mark.docker, pytest.mark.conformance]


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_docker_backend_conforms(docker_backend: Backend, name: str) -> None:
    CHECKS[name](docker_backend)
