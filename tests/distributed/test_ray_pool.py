"""taskgym.ray.EnvPool on a real Ray 2.60 cluster of three nodes on loopback (a head with no
CPU for actors, and two nodes of one CPU, labelled ``a`` and ``b``), in this process:
episodes placed on different nodes score as in process, a hack scores 0, an actor killed
mid-episode ends its episodes with no verdict, starts are refused past the pool's limits, and
nothing (sandbox or Ray process) is left afterwards.

``scripts/test_ray.sh`` makes the venv (taskgym with the ``ray`` extra) and runs these with
``-m ray``; the main run deselects them. Selected without Ray they fail; they do not skip.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import write_answer_task

import taskgym
from taskgym.checks import host_state, sleepers
from taskgym.ray import EnvPool, PoolCapacityError, PoolError
from taskgym.sandbox.host.cleanup import leftovers
from taskgym.sandbox.host.procs import descendants

pytestmark = [pytest.mark.ray, pytest.mark.sandbox, pytest.mark.slow, pytest.mark.timeout(300)]

SOLVE = {"tool": "bash", "args": {"command": "echo 42 > /app/answer.txt"}}
SUBMIT = {"tool": "submit", "args": {}}
FAKE_REWARDS = {"tool": "bash", "args": {"command":
                "mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; "
                "echo '{\"reward\": 1}' > /logs/verifier/reward.json; echo 1 > /tmp/reward.txt; "
                "echo 41 > /app/answer.txt"}}


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


class Nodes:
    """The cluster's two CPU nodes: their Ray node ids by label."""

    def __init__(self, by_label: dict[str, str]) -> None:
        self.by_label = by_label


@pytest.fixture(scope="module")
def cluster() -> Iterator[Nodes]:
    """A head (no CPU) and two one-CPU nodes, all on 127.0.0.1; afterwards no process Ray
    started is left (the cluster is stopped by its own handle; stragglers are killed by pid,
    and fail the test)."""
    # Ray turns a loopback address into the machine's own, unless it runs no real cluster
    # (its switch for Windows and macOS, read at import by every process of the cluster)
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray
    from ray._private import ray_constants
    from ray.cluster_utils import Cluster

    assert not ray_constants.ENABLE_RAY_CLUSTER, "ray was imported before this fixture"
    before = set(descendants(os.getpid()))
    loopback = {"node_ip_address": "127.0.0.1", "include_dashboard": False}
    head = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, **loopback})
    nodes = {label: head.add_node(num_cpus=1, labels={"taskgym-node": label}, **loopback)
             for label in ("a", "b")}
    ray.init(address=head.address, _node_ip_address="127.0.0.1", log_to_driver=False)
    try:
        yield Nodes({label: node.node_id for label, node in nodes.items()})
    finally:
        started = set(descendants(os.getpid())) - before
        ray.shutdown()
        head.shutdown()
        deadline = time.monotonic() + 30
        while (left := {pid for pid in started if alive(pid)}) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        del os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"]
        assert left == set(), f"Ray processes left after the cluster's shutdown: {sorted(left)}"


@pytest.fixture(scope="module")
def tasks(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("ray-tasks")
    write_answer_task(folder / "answer")
    return str(folder)


def nothing_left(pids: list[int], marker: str | None = None) -> None:
    """No sandbox of the actors ``pids`` is left: no process below them, no cgroup, folder or
    mount named after them (what a killed one left was reaped), no ``sleep marker``."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = set().union(*(host_state(pid) for pid in pids))
        state |= {str(path) for path in leftovers() if path.name.split("-")[0] in map(str, pids)}
        if marker:
            state |= {f"sleeper {pid}" for pid in sleepers(marker)}
        if not state:
            return
        time.sleep(0.1)
    raise AssertionError(f"left behind: {sorted(state)}")


def without_timings(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` without what differs between two runs of one episode: times (pytest's own in
    its log), and whether a warm grader (of this process) or a cold one graded."""
    kept = {key: value for key, value in info.items() if key != "usage"}
    if "reward" in kept:
        reward = kept["reward"].model_dump()
        for key in ("verifier_seconds", "verifier_cpu_seconds", "grader_path"):
            reward["details"].pop(key, None)
        reward["details"]["log"] = re.sub(r" in [0-9.]+s", "", reward["details"].get("log", ""))
        kept["reward"] = reward
    return kept


async def play(env: Any, actions: list[Any]) -> list[Any]:
    results = [await env.areset(seed=0)]
    for action in actions:
        results.append(await env.astep(action))
    return results


def test_episodes_on_two_nodes_score_as_in_process(cluster: Nodes, tasks: str,
                                                   local_backend: Any) -> None:
    local = taskgym.make("coding-terminal-v0", tasks=tasks, sandbox=local_backend)
    try:
        expected = [asyncio.run(play(local, actions))
                    for actions in ([SOLVE, SUBMIT], [SUBMIT], [{"tool": "nope"}, SUBMIT])]
    finally:
        local.close()
    pool = EnvPool("coding-terminal-v0", actors=2, sessions_per_actor=2, num_cpus=0.5,
                   tasks=tasks)
    pids = [slot.pid for slot in pool.slots]
    try:
        assert {place["node_id"] for place in pool.placement()} == set(cluster.by_label.values())
        envs = [pool.env() for _ in range(3)]

        async def together() -> list[list[Any]]:
            return list(await asyncio.gather(*(
                play(env, actions) for env, actions in
                zip(envs, ([SOLVE, SUBMIT], [SUBMIT], [{"tool": "nope"}, SUBMIT]), strict=True))))

        got = asyncio.run(together())
        assert {envs[0].node_id, envs[1].node_id} == set(cluster.by_label.values())
        for remote, here in zip(got, expected, strict=True):
            assert remote[0] == here[0]  # the reset's observation and info
            for (obs, reward, term, trunc, info), (obs0, reward0, term0, trunc0, info0) in zip(
                    remote[1:], here[1:], strict=True):
                assert (obs, reward, term, trunc) == (obs0, reward0, term0, trunc0)
                assert without_timings(info) == without_timings(info0)
        assert [episode[-1][1] for episode in got] == [1.0, 0.0, 0.0]
        assert got[0][-1][4]["verdict"] == "graded" and got[0][-1][4]["reward"].success
        sync = pool.env()  # the blocking API, on the same actors
        assert sync.reset(seed=0)[0] == expected[0][0][0]
        obs, reward, terminated, truncated, info = sync.step(threading.Lock())  # Ray cannot
        assert obs["text"].startswith("error:") and "error" in info  # carry it: its repr goes
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert sync.step(SOLVE)[1:4] == (0.0, False, False)
        assert sync.step(SUBMIT)[1:4] == (1.0, True, False)
        assert sync.step(SUBMIT)[0]["text"].startswith("error: the episode is over")
        for env in (*envs, sync):
            env.close()
    finally:
        pool.close()
    nothing_left(pids)


@pytest.mark.hacks
def test_a_fake_reward_file_through_the_pool_scores_0(cluster: Nodes, tasks: str) -> None:
    with EnvPool("coding-terminal-v0", actors=1, num_cpus=0.25, tasks=tasks) as pool:
        env = pool.env()
        env.reset(seed=0)
        env.step(FAKE_REWARDS)
        obs, reward, terminated, truncated, info = env.step(SUBMIT)
        assert (reward, terminated, info["verdict"]) == (0.0, True, "graded")
        assert info["reward"].success is False
        pids = [slot.pid for slot in pool.slots]
    nothing_left(pids)


def test_a_label_selector_places_the_actors(cluster: Nodes, tasks: str) -> None:
    with EnvPool("coding-terminal-v0", actors=2, num_cpus=0.25, tasks=tasks,
                 label_selector={"taskgym-node": "b"}) as pool:
        assert [place["node_id"] for place in pool.placement()] == [cluster.by_label["b"]] * 2
    with pytest.raises(PoolError, match="not all placed"):
        EnvPool("coding-terminal-v0", actors=1, num_cpus=0.25, tasks=tasks,
                label_selector={"taskgym-node": "nowhere"}, start_timeout=5)


def test_a_killed_actor_ends_its_episodes_with_no_verdict(cluster: Nodes, tasks: str) -> None:
    marker = f"{os.getpid()}{time.monotonic_ns() % 10**6}"
    pool = EnvPool("coding-terminal-v0", actors=1, sessions_per_actor=2, num_cpus=0.25,
                   max_restarts=1, tasks=tasks)
    killed = pool.slots[0].pid
    try:
        running, idle = pool.env(), pool.env()

        async def kill_mid_step() -> tuple[Any, Any, Any]:
            await running.areset(seed=0)
            await idle.areset(seed=0)
            await idle.astep(SOLVE)
            step = asyncio.ensure_future(running.astep(
                {"tool": "bash", "args": {"command": f"sleep {marker}"}}))
            deadline = time.monotonic() + 60
            while not sleepers(marker):
                assert time.monotonic() < deadline and not step.done(), "the step never ran"
                await asyncio.sleep(0.05)
            os.kill(killed, signal.SIGKILL)
            ended = await asyncio.wait_for(step, 60)
            return ended, await running.astep(SUBMIT), await idle.astep(SUBMIT)

        ended, after, idle_end = asyncio.run(kill_mid_step())
        obs, reward, terminated, truncated, info = ended
        assert (reward, terminated, truncated) == (0.0, True, False)
        assert info["verdict"] == "none" and info["failure"] == "backend_lost"
        assert info["reward"].verdict == "none" and info["reward"].score == 0.0
        assert f"the Ray actor 0 of the EnvPool (node {cluster.by_label['a']}" in info["error"] \
            or f"(node {cluster.by_label['b']}" in info["error"]
        assert f"pid {killed}" in info["error"] and obs["text"] == f"error: {info['error']}"
        assert after[0]["text"].startswith("error: the episode is over")
        assert "reward" not in after[4]
        assert idle_end[1:4] == (0.0, True, False) and idle_end[4]["verdict"] == "none"
        assert idle_end[4]["failure"] == "backend_lost"  # its actor came back without it
        assert sleepers(marker) == set()  # the sandbox died with its actor
        env = pool.env()  # the restarted actor takes new episodes
        env.reset(seed=0)
        env.step(SOLVE)
        assert env.step(SUBMIT)[1] == 1.0
        restarted = pool.placement()[0]["pid"]
        assert restarted != killed
    finally:
        pool.close()
    nothing_left([killed, restarted], marker)


def test_starts_past_the_pools_limits_are_refused(cluster: Nodes, tasks: str) -> None:
    with EnvPool("coding-terminal-v0", actors=1, sessions_per_actor=2, max_pending_calls=1,
                 num_cpus=0.25, tasks=tasks) as pool:
        first, second, third = pool.env(), pool.env(), pool.env()

        async def while_a_step_runs() -> None:
            await first.areset(seed=0)
            step = asyncio.ensure_future(first.astep({"tool": "bash",
                                                      "args": {"command": "sleep 2"}}))
            await asyncio.sleep(0.2)
            with pytest.raises(PoolCapacityError, match=r"1 calls in flight \(max_pending_calls\)"):
                await second.areset(seed=0)
            assert pool.slots[0].envs == {first.session}  # the refused one holds no session
            assert (await step)[1:4] == (0.0, False, False)
            await second.areset(seed=0)
            with pytest.raises(PoolCapacityError, match=r"every session of the EnvPool holds an "
                               r"episode \(2 of 1 actors x 2 sessions\)"):
                await third.areset(seed=0)
            await first.aclose()
            await third.areset(seed=0)  # a closed env's session is free again
            assert (await third.astep(SUBMIT))[1:3] == (0.0, True)

        asyncio.run(while_a_step_runs())
        pids = [slot.pid for slot in pool.slots]
    nothing_left(pids)
    with pytest.raises(PoolError, match="closed"):
        pool.env()
