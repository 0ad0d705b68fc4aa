"""EnvPool steps per second with 1, 2 and 4 simulated Ray nodes (needs the ``ray`` extra).

For each node count N, a Ray cluster on 127.0.0.1 (a head with no CPU for actors and N nodes
of one CPU each, ``ray.cluster_utils.Cluster``) runs an :class:`~taskgym.ray.EnvPool` of N
actors (one per node: ``num_cpus=1``) with ``sessions`` episodes each, all stepping
``coding-terminal-v0``'s ``/bin/echo hi`` (a process started in the sandbox) at once from one
driver. The figure is total steps over wall time, and its ratio to one node's. Every "node"
shares this machine's CPUs, so the curve shows what the pool's fan-out costs or gains here,
not a speed-up that real machines would give. Each cluster is stopped by its own handle.

    python benchmarks/ray_pool.py [--nodes 1 2 4] [--sessions 4] [--steps 20]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, load_note  # noqa: E402

from taskgym.ray import EnvPool  # noqa: E402

STEP = {"tool": "bash", "args": {"command": "/bin/echo hi"}}


def answer_tasks(folder: Path) -> str:
    """One trivial task folder (its test wants 42 in /app/answer.txt)."""
    task = folder / "answer"
    (task / "environment" / "files").mkdir(parents=True)
    (task / "environment" / "files" / "notes.txt").write_text("the answer goes in answer.txt\n")
    (task / "solution").mkdir()
    (task / "solution" / "solve.sh").write_text("#!/bin/bash\necho 42 > /app/answer.txt\n")
    (task / "tests").mkdir()
    (task / "tests" / "test_x.py").write_text(
        "from pathlib import Path\n\n\ndef test_answer():\n"
        "    assert Path('/app/answer.txt').read_text().strip() == '42'\n")
    (task / "instruction.md").write_text("Write 42 to /app/answer.txt.\n")
    (task / "task.toml").write_text("[agent]\nmax_steps = 10000\ntimeout_sec = 3600\n"
                                    "[verifier]\ntimeout_sec = 60\nexpected_tests = 1\n")
    return str(folder)


async def episode(env: Any, steps: int) -> None:
    await env.areset(seed=0)
    for _ in range(steps):
        obs = (await env.astep(STEP))[0]
        assert obs["text"] == "hi\n[exit code 0]", obs
    await env.aclose()


def steps_per_second(nodes: int, sessions: int, steps: int, tasks: str) -> float:
    import ray
    from ray.cluster_utils import Cluster

    loopback = {"node_ip_address": "127.0.0.1", "include_dashboard": False}
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, **loopback})
    try:
        for _ in range(nodes):
            cluster.add_node(num_cpus=1, **loopback)
        ray.init(address=cluster.address, _node_ip_address="127.0.0.1", log_to_driver=False)
        with EnvPool(ENV_ID, actors=nodes, sessions_per_actor=sessions, num_cpus=1,
                     tasks=tasks) as pool:
            envs = [pool.env() for _ in range(nodes * sessions)]

            async def warm_then_run() -> float:
                await asyncio.gather(*(episode(env, 1) for env in envs))  # workers, imports
                start = time.perf_counter()
                await asyncio.gather(*(episode(env, steps) for env in envs))
                return time.perf_counter() - start

            elapsed = asyncio.run(warm_then_run())
        return nodes * sessions * steps / elapsed
    finally:
        ray.shutdown()
        cluster.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--sessions", type=int, default=4, help="episodes per actor")
    parser.add_argument("--steps", type=int, default=20, help="steps per episode")
    args = parser.parse_args()
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # keep Ray's addresses on loopback
    print(load_note())
    rates: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        tasks = answer_tasks(Path(folder))
        for nodes in args.nodes:
            rates[nodes] = steps_per_second(nodes, args.sessions, args.steps, tasks)
    base = rates[args.nodes[0]]
    print(f"\nEnvPool steps/s ({args.sessions} episodes per actor, one actor per node, "
          f"{args.steps} steps each)")
    print(f"{'nodes':>5}  {'steps/s':>8}  {'vs ' + str(args.nodes[0]) + ' node':>10}")
    for nodes, rate in rates.items():
        print(f"{nodes:>5}  {rate:>8.1f}  {rate / base:>9.2f}x")


if __name__ == "__main__":
    main()
