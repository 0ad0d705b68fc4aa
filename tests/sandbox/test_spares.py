"""Spare sandboxes for forks (sandbox/snapshots/spares.py), on both backends: a fork fills a started,
unused sandbox of the same spec; the child is as independent as one started on the spot; a
dead spare or another spec is never used; closing leaves nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import taskgym
from taskgym.checks import host_state
from taskgym.core.env import TaskEnv
from taskgym.sandbox import Backend, SandboxSpec, Session
from taskgym.sandbox.snapshots.spares import Spares

SPEC = SandboxSpec(memory_mb=300, pids=64)


@pytest.fixture()
def spares(backend: Backend) -> Iterator[Spares]:
    made = Spares(backend)
    yield made
    made.close()


@pytest.fixture()
def parent(backend: Backend) -> Iterator[Session]:
    with backend.start(SPEC) as started:
        started.exec("echo secret-of-parent > /app/data; export WHO=parent; cd /tmp")
        yield started


def test_a_fork_fills_a_spare(backend: Backend, spares: Spares, parent: Session) -> None:
    spares.want(SPEC, 2)
    assert spares.ready(60) and spares.live() == 2
    snap = parent.snapshot()
    try:
        kids = [backend.fork(snap, spares) for _ in range(3)]  # the third starts on the spot
    finally:
        snap.close()
    try:
        assert spares.taken == 2 and spares.live() == 0
        for index, kid in enumerate(kids):
            assert kid.exec("cat /app/data; echo $WHO; pwd").stdout == \
                "secret-of-parent\nparent\n/tmp\n"
            kid.exec(f"echo {index} > /app/data; export WHO=kid{index}")
        assert [k.read_file("/app/data") for k in kids] == [b"0\n", b"1\n", b"2\n"]
        assert parent.read_file("/app/data") == b"secret-of-parent\n"
        assert parent.exec("echo $WHO").stdout == "parent\n"
        # each its own sandbox: stopping one leaves the others and the parent running
        assert {k.limits_enforced_by for k in kids} == {parent.limits_enforced_by}
        kids[0].stop()
        assert not kids[0].alive and kids[1].alive and parent.alive
        assert kids[1].exec("echo fine").stdout == "fine\n"
    finally:
        for kid in kids:
            kid.close()


def test_spares_never_saw_agent_data(spares: Spares, parent: Session) -> None:
    """A spare is started before any snapshot and nothing runs in it until it is taken."""
    spares.want(SPEC, 1)
    assert spares.ready(60)
    spare = spares.take(SPEC)
    assert spare is not None
    try:
        assert spare.exec("ls -A /app; echo ${WHO-unset}; pwd").stdout == "unset\n/app\n"
    finally:
        spare.close()


def test_another_spec_or_a_dead_spare_is_not_used(backend: Backend, spares: Spares,
                                                  parent: Session) -> None:
    spares.want(SPEC, 1)
    assert spares.ready(60)
    other = SPEC.model_copy(update={"memory_mb": 400})
    assert spares.take(other) is None and spares.live() == 0  # the old spec's spare closed
    spares.want(SPEC, 1)
    assert spares.ready(60) and spares.live() == 1
    spare = spares._ready[0]
    spare.stop()  # dies while waiting
    snap = parent.snapshot()
    try:
        with backend.fork(snap, spares) as kid:
            assert spares.taken == 0  # the dead one was skipped; the child started on the spot
            assert kid.exec("cat /app/data").stdout == "secret-of-parent\n"
    finally:
        snap.close()


def test_turned_off(monkeypatch: pytest.MonkeyPatch, spares: Spares) -> None:
    monkeypatch.setenv("TASKGYM_FORK_SPARES", "0")
    spares.want(SPEC, 4)
    assert spares.ready(5) and spares.live() == 0


def test_env_forks_use_spares_and_close_them(backend: Backend) -> None:
    before = host_state()  # processes, cgroups, temporary folders, mounts of this process
    env = taskgym.make("coding-terminal-v0", sandbox=backend).unwrapped
    assert isinstance(env, TaskEnv)
    try:
        env.reset(options={"task_id": "py-fix-memo-leak"})
        env.step({"tool": "bash", "args": {"command": "echo 1 > /app/step"}})
        first = env.fork(2)
        assert env.fork_spares().ready(60) and env.fork_spares().live() == 2
        second = env.fork(2)
        assert env.fork_spares().taken == 2
        for child in (*first, *second):
            assert child.session.read_file("/app/step") == b"1\n"
            child.close()
        assert env.fork_spares().ready(60)
    finally:
        env.close()
    assert env.fork_spares().live() == 0
    if backend.name == "local":  # every spare's bwrap, cgroup and folder is gone with the env
        assert host_state() <= before, host_state() - before
