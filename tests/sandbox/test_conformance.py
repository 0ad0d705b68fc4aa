"""Every conformance check, on the local backend (CI runs this file as root and as a user)."""

from __future__ import annotations

import pytest

from taskgym.sandbox import Backend
from taskgym.sandbox.conformance import CHECKS, check_backend

pytestmark = [pytest.mark.sandbox, pytest.mark.conformance]


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_local_backend_conforms(local_backend: Backend, name: str) -> None:
    CHECKS[name](local_backend)


def test_check_backend_reports_failures(local_backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(_backend: Backend) -> None:
        raise AssertionError("deliberately broken")

    monkeypatch.setitem(CHECKS, "broken", broken)
    monkeypatch.setattr("taskgym.sandbox.conformance.CHECKS",
                        {"broken": broken, "exec_output_and_status": CHECKS["exec_output_and_status"]})
    assert check_backend(local_backend) == {"broken": "deliberately broken"}
