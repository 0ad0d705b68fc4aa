"""The unisolated backend (a test double, not a sandbox): every conformance check it does not
skip, and what the skipped shell checks test, in its own workspace."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from taskgym.errors import ConfigError
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.conformance import CHECKS
from taskgym.sandbox.unisolated import SKIPPED_CHECKS, UnisolatedBackend

pytestmark = pytest.mark.conformance

BACKEND = UnisolatedBackend()


@pytest.mark.parametrize("name", sorted(set(CHECKS) - set(SKIPPED_CHECKS)))
def test_the_unisolated_backend_passes_the_checks_it_does_not_skip(name: str) -> None:
    CHECKS[name](BACKEND)


def test_every_skipped_check_exists_and_says_why() -> None:
    assert set(SKIPPED_CHECKS) <= set(CHECKS)
    assert all(reason.strip() for reason in SKIPPED_CHECKS.values())


def test_shell_state_persists_in_its_workspace() -> None:
    with BACKEND.start(SandboxSpec()) as session:
        session.exec("mkdir -p sub && cd sub && export GREETING=hello && count=41")
        result = session.exec('echo "$PWD $GREETING $((count + 1))"')
        assert result.stdout == f"{session.workspace}/sub hello 42\n"  # type: ignore[attr-defined]


def test_an_exited_shell_is_replaced_in_the_same_workspace() -> None:
    with BACKEND.start(SandboxSpec()) as session:
        session.exec("echo data > file.txt; cd /")
        result = session.exec("exit 7")
        assert result.restarted and result.exit_code == 7
        result = session.exec("pwd; cat file.txt")
        assert result.stdout == f"{session.workspace}\ndata\n"  # type: ignore[attr-defined]


def test_a_timeout_kills_what_the_command_started_and_nothing_before() -> None:
    with BACKEND.start(SandboxSpec()) as session:
        session.exec("sleep 300 & echo $! > earlier.pid")
        time.sleep(0.05)  # process start times have a resolution of one clock tick
        result = session.exec("sleep 301 & echo $! > later.pid; sleep 302", timeout=1)
        assert result.timed_out and result.exit_code == 124 and not result.restarted
        earlier, later = (int(session.read_file(f"{name}.pid")) for name in ("earlier", "later"))
        assert Path(f"/proc/{earlier}").exists()
        assert not Path(f"/proc/{later}").exists() or "Z" in Path(f"/proc/{later}/stat").read_text()


@pytest.mark.parametrize("spec", [SandboxSpec(ro_binds={"/etc": "/tests"}),
                                  SandboxSpec(writable_dirs=("/logs",)), SandboxSpec(image="x")])
def test_a_spec_that_needs_a_mount_is_refused(spec: SandboxSpec) -> None:
    with pytest.raises(ConfigError, match="the unisolated backend mounts nothing"):
        BACKEND.start(spec)
    with pytest.raises(ConfigError, match="the unisolated backend mounts nothing"):
        BACKEND.run(spec, ["true"])


def test_close_removes_its_folder() -> None:
    session = BACKEND.start(SandboxSpec())
    folder = Path(session.workspace).parent  # type: ignore[attr-defined]
    session.exec("sleep 100 &")
    session.close()
    assert not folder.exists() and not session.alive
