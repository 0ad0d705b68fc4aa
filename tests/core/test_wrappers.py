"""taskgym's own methods through the wrappers ``taskgym.make`` and ``gymnasium.make`` add."""

from __future__ import annotations

import asyncio
import hashlib

import gymnasium
import pytest
from gymnasium.wrappers import RecordEpisodeStatistics

import taskgym
from taskgym.core.env import TaskEnv
from taskgym.core.wrappers import TaskMethods
from taskgym.errors import SandboxError

ECHO = {"tool": "bash", "args": {"command": "echo hi"}}
TASK = {"task_id": "py-fix-memo-leak"}


METHODS = ("areset", "astep", "aclose", "poll_step", "snapshot", "restore", "fork", "clone")


def test_taskgym_make_forwards_taskgym_methods() -> None:
    env = taskgym.make("coding-terminal-v0")
    assert isinstance(env, TaskMethods)
    assert isinstance(env.unwrapped, TaskEnv)
    for name in METHODS:
        assert getattr(env, name).__func__ is getattr(TaskMethods, name)
    env.close()


def test_gymnasium_make_reaches_them_through_get_wrapper_attr() -> None:
    env = gymnasium.make("taskgym/coding-terminal-v0")  # no TaskMethods: see core/wrappers.py
    try:
        for name in METHODS:
            assert env.get_wrapper_attr(name).__self__ is env.unwrapped
    finally:
        env.close()


@pytest.mark.sandbox
def test_async_episode_through_the_wrappers_equals_the_sync_one() -> None:
    sync_env, async_env = taskgym.make("coding-terminal-v0"), taskgym.make("coding-terminal-v0")
    try:
        sync_env.reset(options=TASK)
        expected = sync_env.step(ECHO)

        async def episode() -> tuple:
            await async_env.areset(options=TASK)
            return await async_env.astep(ECHO)

        got = asyncio.run(episode())
        assert got[0] == expected[0] and got[1:3] == expected[1:3]
        asyncio.run(async_env.aclose())
        with pytest.raises(SandboxError):  # aclose ended the episode's sandbox
            async_env.unwrapped.session  # noqa: B018
    finally:
        sync_env.close()
        async_env.close()


@pytest.mark.sandbox
def test_snapshot_restore_and_fork_through_the_wrappers() -> None:
    env = taskgym.make("coding-terminal-v0")
    children: list[TaskEnv] = []
    try:
        env.reset(options=TASK)
        env.step({"tool": "bash", "args": {"command": "echo kept > note.txt"}})
        snap = env.snapshot()
        env.step({"tool": "bash", "args": {"command": "rm note.txt"}})
        env.restore(snap)
        obs = env.step({"tool": "bash", "args": {"command": "cat note.txt"}})[0]
        assert obs["text"].startswith("kept")
        clone = env.clone()
        children = [clone]
        assert type(clone) is type(env.unwrapped)
        clone.reset(options=TASK)  # a new episode of the same configuration
        assert clone.step(ECHO)[0]["text"].startswith("hi\n")
        children += env.fork(2)
        for child in children[1:]:
            assert isinstance(child, TaskEnv)
            text = child.step({"tool": "bash", "args": {"command": "sha256sum note.txt"}})[0]["text"]
            assert hashlib.sha256(b"kept\n").hexdigest() in text
    finally:
        for child in children:
            child.close()
        env.close()


def test_a_users_own_wrapper_hides_them_and_get_wrapper_attr_finds_them() -> None:
    env = RecordEpisodeStatistics(taskgym.make("coding-terminal-v0"))
    try:
        with pytest.raises(AttributeError):
            env.astep  # noqa: B018
        assert env.get_wrapper_attr("astep").__self__ is env.env
    finally:
        env.close()
