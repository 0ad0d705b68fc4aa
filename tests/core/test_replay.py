"""State replay: the prefix cache behind ``reset(options={"replay": ...})``, and group()."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

import taskgym
from taskgym import rollouts
from taskgym.core.env import TaskEnv
from taskgym.core.replay import DEFAULT_MAX_BYTES
from taskgym.sandbox.host.cleanup import memory_root, runtime_root

pytestmark = pytest.mark.sandbox

CODING = "coding-terminal-v0"
TASK = "py-fix-memo-leak"


def bash(command: str) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": command}}


PREFIX = [bash(f"echo {n} >> /app/log") for n in range(3)]


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    rollouts.clear_replay_cache()
    yield
    rollouts.clear_replay_cache()
    rollouts.set_replay_cache_size(DEFAULT_MAX_BYTES)


@pytest.fixture(params=[pytest.param("local", marks=pytest.mark.sandbox),
                        pytest.param("docker", marks=pytest.mark.docker)])
def env(request: pytest.FixtureRequest) -> Iterator[TaskEnv]:
    made = taskgym.make(CODING, sandbox=request.param).unwrapped
    assert isinstance(made, TaskEnv)
    yield made
    made.close()


def replay(env: TaskEnv, prefix: list[dict[str, Any]], task: str = TASK
           ) -> tuple[dict[str, str], dict[str, Any]]:
    return env.reset(options={"task_id": task, "replay": prefix})


def test_hits_misses_and_longest_prefix(env: TaskEnv) -> None:
    obs, info = replay(env, PREFIX)
    assert info["replay"] == {"hit": False, "cached_steps": 0, "replayed_steps": 3}
    assert info["step"] == 3 and env.steps_taken == 3 and obs["text"] == "[exit code 0]"
    env.step(bash("echo changed >> /app/log"))  # what the episode did after is not cached

    obs2, info2 = replay(env, PREFIX)
    assert info2["replay"] == {"hit": True, "cached_steps": 3, "replayed_steps": 0}
    assert obs2 == obs and env.steps_taken == 3

    longer = [*PREFIX, bash("cat /app/log")]
    obs3, info3 = replay(env, longer)
    assert info3["replay"] == {"hit": True, "cached_steps": 3, "replayed_steps": 1}
    assert obs3["text"].startswith("0\n1\n2\n[exit")
    stats = rollouts.replay_cache_stats()
    assert (stats.hits, stats.misses, stats.evictions, stats.entries) == (2, 1, 0, 2)

    _obs, other = replay(env, [bash("echo 9 >> /app/log"), *PREFIX[1:]])  # another first step
    assert other["replay"]["hit"] is False
    assert rollouts.replay_cache_stats().misses == 2


def test_the_key_holds_the_config_task_and_seed() -> None:
    first = taskgym.make(CODING).unwrapped
    other = taskgym.make(CODING, max_steps=50).unwrapped
    try:
        assert replay(first, PREFIX)[1]["replay"]["hit"] is False
        assert replay(first, PREFIX)[1]["replay"]["hit"] is True
        assert replay(other, PREFIX)[1]["replay"]["hit"] is False  # other limits
        assert other.episode_limits.max_steps == 50
        second_task = next(t for t in first.task_set.ids() if t != TASK)
        assert replay(first, PREFIX, second_task)[1]["replay"]["hit"] is False
        seeded = first.reset(seed=5, options={"task_id": TASK, "replay": PREFIX})
        assert seeded[1]["replay"]["hit"] is False
    finally:
        first.close()
        other.close()


def test_lru_eviction_by_bytes() -> None:
    env = taskgym.make(CODING).unwrapped
    try:
        def prefix(n: int) -> list[dict[str, Any]]:
            return [bash(f"head -c 200000 /dev/zero > /app/blob{n}")]

        replay(env, prefix(0))
        one = rollouts.replay_cache_stats().bytes
        assert one > 200_000
        rollouts.set_replay_cache_size(int(one * 2.5))
        for n in (1, 2, 3):
            replay(env, prefix(n))
        stats = rollouts.replay_cache_stats()
        assert stats.entries == 2 and stats.evictions == 2 and stats.bytes <= stats.max_bytes
        assert replay(env, prefix(3))[1]["replay"]["hit"] is True  # the newest stayed
        assert replay(env, prefix(0))[1]["replay"]["hit"] is False  # the oldest went
        rollouts.set_replay_cache_size(0)  # shrinking evicts now
        assert rollouts.replay_cache_stats().entries == 0
    finally:
        env.close()
    roots = [root for root in (runtime_root(), memory_root()) if root is not None]
    assert not [p for root in roots for p in root.iterdir()
                if p.name.startswith(f"{os.getpid()}-") and p.name.endswith("-snapshot")]


def test_a_prefix_that_ends_the_episode_is_an_error(env: TaskEnv) -> None:
    with pytest.raises(taskgym.ConfigError, match="replay action 1 .*ended the episode"):
        replay(env, [PREFIX[0], {"tool": "submit", "args": {}}])
    assert env.is_over
    assert rollouts.replay_cache_stats().entries == 0


def test_error_actions_are_steps_like_any_other(env: TaskEnv) -> None:
    obs, info = replay(env, [{"tool": "nope", "args": {}}, bash("exit 3")])
    assert info["replay"]["replayed_steps"] == 2 and env.steps_taken == 2
    assert "3" in obs["text"]


@pytest.mark.parametrize(("options", "message"), [
    ({"replay": PREFIX}, "needs 'task_id'"),
    ({"task_id": TASK, "replay": "ls"}, "list of actions"),
    ({"task_id": TASK, "replay": [{"tool": "bash", "args": {"command": object()}}]}, "JSON"),
])
def test_bad_replay_options(options: dict[str, Any], message: str) -> None:
    env = taskgym.make(CODING).unwrapped
    try:
        with pytest.raises(taskgym.ConfigError, match=message):
            env.reset(options=options)
    finally:
        env.close()


def test_group_returns_ready_independent_envs() -> None:
    envs = rollouts.group(CODING, TASK, PREFIX, 3)
    try:
        assert len(envs) == 3 and len({id(e.session) for e in envs}) == 3
        for index, env in enumerate(envs):
            assert env.steps_taken == 3 and env.task is not None and env.task.id == TASK
            assert env.restored_observation == {"text": "[exit code 0]"}
            env.step(bash(f"echo child{index} > /app/mine"))
        assert [e.session.read_file("/app/mine") for e in envs] == [b"child0\n", b"child1\n",
                                                                    b"child2\n"]
        assert [e.session.read_file("/app/log") for e in envs] == [b"0\n1\n2\n"] * 3
        again = rollouts.group(CODING, TASK, PREFIX, 1)
        assert rollouts.replay_cache_stats().hits == 1
        again[0].close()
    finally:
        for env in envs:
            env.close()


def test_group_of_an_empty_prefix_starts_at_the_instruction() -> None:
    (env,) = rollouts.group(CODING, TASK, [], 1)
    try:
        assert env.steps_taken == 0 and env.restored_observation is not None
        assert env.task is not None and env.restored_observation["text"] == env.task.instruction
    finally:
        env.close()


def test_concurrent_replays_with_evictions() -> None:
    """Threads replaying while others evict: a restore never meets a deleted snapshot (its
    entry is pinned), and each env ends where its own prefix leads."""
    prefixes = [[bash(f"head -c 100000 /dev/zero > /app/z; echo {n} > /app/which")]
                for n in range(3)]
    first = taskgym.make(CODING).unwrapped
    replay(first, prefixes[0])
    rollouts.set_replay_cache_size(int(rollouts.replay_cache_stats().bytes * 1.5))
    first.close()
    errors: list[BaseException] = []

    def worker(offset: int) -> None:
        env = taskgym.make(CODING).unwrapped
        try:
            for round_ in range(4):
                n = (offset + round_) % 3
                replay(env, prefixes[n])
                assert env.session.read_file("/app/which") == f"{n}\n".encode()
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            env.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stats = rollouts.replay_cache_stats()
    assert stats.evictions >= 1 and stats.entries <= 1 and stats.hits + stats.misses == 13
