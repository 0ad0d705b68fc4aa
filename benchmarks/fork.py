"""Snapshot and fork: the cost of one child at 1 MB and 500 MB of workspace, and fork(16)
against reset-and-replay of a 20-step prefix.

    python3 benchmarks/fork.py [--quick] [--cow]

"fork of one child" is what ``env.fork(1)`` costs in the sandbox: ``session.snapshot()``
(the workspace saved to a host folder, the shell's state captured) plus
``backend.fork(snap)`` (a sandbox started, or a spare one taken, the workspace copied in, the
state sourced). "cold": no spare, the child's sandbox is started then; "spare ready": a
spare sandbox (sandbox/snapshots/spares.py) was started ahead. At 1 MB the env-level ``env.fork(1)``
(which also constructs the child env) is timed too.

With ``--cow`` (root, xfsprogs and btrfs-progs), the same figures are measured again with
the runtime root on a loop filesystem with reflinks made for the run and removed after (even
on error): btrfs with quotas (workspaces are capped subvolumes there, so snapshots and
forks clone files) and XFS with ``reflink=1`` (no quota to cap a folder: workspaces stay
tmpfs, so the copy is a full one). On btrfs the first snapshot after the files were written
also pays their writeback (a clone needs the data on disk): it is shown on its own row.

Targets: <= 10 ms at 1 MB, <= 30 ms at 500 MB; fork(16) as a ratio to 16 resets that each
replay the 20 steps (the higher, the better).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, TASK_ID, Row, load_note, median, ms, percentile, print_rows, table  # noqa: E402

import taskgym  # noqa: E402
from taskgym import rollouts  # noqa: E402
from taskgym.sandbox import SandboxSpec, get_backend  # noqa: E402
from taskgym.sandbox.host.cleanup import set_runtime_root  # noqa: E402
from taskgym.sandbox.snapshots import disk
from taskgym.sandbox.snapshots.loopfs import loop_filesystem, missing  # noqa: E402
from taskgym.sandbox.snapshots.spares import Spares  # noqa: E402

TARGET_SMALL_MS = 10.0
TARGET_LARGE_MS = 30.0
PREFIX_STEPS = 20
CHILDREN = 16


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def session_fork(size_mb: int, n: int) -> tuple[dict[str, list[float]], str]:
    """Snapshot and fork timings of a bare session holding ``size_mb`` MB of files, cold and
    with a spare ready; and how the snapshot saved the files (workspace storage, method)."""
    backend = get_backend("local")
    spec = SandboxSpec(disk_mb=max(512, size_mb * 2 + 64))
    times: dict[str, list[float]] = {
        "backend.start, empty (a cold child's floor)": [], "first snapshot after writing": [],
        "snapshot": [], "backend.fork, cold": [], "backend.fork, spare ready": [],
        "one child, cold": [], "one child, spare ready": []}
    spares = Spares(backend)
    try:
        with backend.start(spec) as parent:
            # 64 files, so the tree walk counts too; random data, so nothing compresses
            each = max(1, size_mb * 1024 // 64)
            made = parent.exec(f"mkdir -p /app/d && for i in $(seq 64); do head -c {each}K "
                               "/dev/urandom > /app/d/f$i; done; export X=1; cd /app/d",
                               timeout=600)
            assert made.exit_code == 0, made
            t_first, first = _timed(parent.snapshot)
            how = f"{parent.workspace_storage} workspace, snapshot by {first.copy_method}"
            if first.copy_note:
                how += f" ({first.copy_note})"
            how += f" into {'memory' if first.storage == 'memory' else 'the runtime root'}"
            first.close()
            times["first snapshot after writing"].append(t_first)
            for _ in range(n):
                t_start, bare = _timed(lambda: backend.start(spec))
                bare.close()
                times["backend.start, empty (a cold child's floor)"].append(t_start)
                for label, pool in (("cold", None), ("spare ready", spares)):
                    if pool is not None:
                        pool.want(spec, 1)
                        assert pool.ready(60) and pool.live() == 1
                    t_snap, snap = _timed(parent.snapshot)
                    t_fork, child = _timed(lambda: backend.fork(snap, pool))  # noqa: B023
                    child.close()
                    snap.close()
                    times["snapshot"].append(t_snap)
                    times[f"backend.fork, {label}"].append(t_fork)
                    times[f"one child, {label}"].append(t_snap + t_fork)
    finally:
        spares.close()
    return times, how


@contextlib.contextmanager
def no_spares(env: Any) -> Iterator[None]:
    """Forks of ``env`` start every child's sandbox then: the spares its last fork asked for
    are waited for and closed, and none are asked for meanwhile (TASKGYM_FORK_SPARES=0)."""
    spares = env.fork_spares()
    assert spares.ready(300)
    while (spare := spares.take(env.session.spec)) is not None:
        spare.close()
    old = os.environ.get("TASKGYM_FORK_SPARES")
    os.environ["TASKGYM_FORK_SPARES"] = "0"
    try:
        yield
    finally:
        if old is None:
            del os.environ["TASKGYM_FORK_SPARES"]
        else:
            os.environ["TASKGYM_FORK_SPARES"] = old


def spares_ready(env: Any, n: int) -> None:
    spares = env.fork_spares()
    spares.want(env.session.spec, n)
    assert spares.ready(300) and spares.live() >= n, spares.live()


def env_fork_small(n: int) -> tuple[list[float], list[float]]:
    """env.fork(1) at 1 MB, cold and with a spare ready."""
    env = taskgym.make(ENV_ID).unwrapped
    cold: list[float] = []
    ready: list[float] = []
    try:
        env.reset(options={"task_id": TASK_ID})
        env.step({"tool": "bash", "args": {"command": "head -c 1000000 /dev/urandom > /app/blob"}})
        for _ in range(n):
            with no_spares(env):
                t, (child,) = _timed(lambda: env.fork(1))
            cold.append(t)
            child.close()
            spares_ready(env, 1)
            t, (child,) = _timed(lambda: env.fork(1))
            ready.append(t)
            child.close()
        return cold, ready
    finally:
        env.close()


def fork_against_replay(rounds: int) -> dict[str, list[float]]:
    """Per round: env.fork(16) at the end of a 20-step prefix, cold and with 16 spares ready;
    16 resets that each run the prefix; 16 resets that replay it from the cache (hits)."""
    prefix = [{"tool": "bash", "args": {"command": f"echo {i} >> /app/log"}}
              for i in range(PREFIX_STEPS)]
    env = taskgym.make(ENV_ID).unwrapped
    found: dict[str, list[float]] = {"cold": [], "ready": [], "replays": [], "cached": []}
    try:
        def run_prefix() -> None:
            env.reset(options={"task_id": TASK_ID})
            for action in prefix:
                env.step(action)

        def cached_replays() -> None:
            for _ in range(CHILDREN):
                env.reset(options={"task_id": TASK_ID, "replay": prefix})

        def fork_all(label: str) -> None:
            t, children = _timed(lambda: env.fork(CHILDREN))
            found[label].append(t)
            for child in children:
                child.close()

        run_prefix()
        for _ in range(rounds):
            run_prefix()
            with no_spares(env):
                fork_all("cold")
            spares_ready(env, CHILDREN)
            fork_all("ready")
            found["replays"].append(_timed(lambda: [run_prefix() for _ in range(CHILDREN)])[0])
            rollouts.clear_replay_cache()
            env.reset(options={"task_id": TASK_ID, "replay": prefix})  # fills the cache
            found["cached"].append(_timed(cached_replays)[0])
    finally:
        env.close()
        rollouts.clear_replay_cache()
    return found


def _row(what: str, values: list[float]) -> list[str]:
    return [what, f"{ms(median(values)):.1f}", f"{ms(percentile(values, 95)):.1f}"]


def one_child_rows(where: str, n_small: int, n_large: int
                   ) -> tuple[list[list[str]], list[float], list[float]]:
    """The per-step rows of 1 MB and 500 MB forks with the runtime root where it is now; the
    times of one child with a spare ready (1 MB, 500 MB)."""
    rows: list[list[str]] = []
    best: list[list[float]] = []
    for label, size, n in (("1 MB", 1, n_small), ("500 MB", 500, n_large)):
        times, how = session_fork(size, n)
        rows.append([f"-- {label} on {where}: {how}", "", ""])
        rows += [_row(f"{what} ({label})", v) for what, v in times.items()]
        best.append(times["one child, spare ready"])
    return rows, best[0], best[1]


Found = dict[str, tuple[list[float], list[float]]]


def cow_rows(n_small: int, n_large: int) -> tuple[list[list[str]], Found]:
    """:func:`one_child_rows` on a loop btrfs and a loop XFS (skipped, with why, when this
    machine cannot make them)."""
    rows: list[list[str]] = []
    best: Found = {}
    for kind in ("btrfs", "xfs"):
        problem = missing(kind)
        if problem:
            rows.append([f"-- {kind}: not measured ({problem})", "", ""])
            continue
        with loop_filesystem(kind, 4096) as folder:
            set_runtime_root(folder)
            try:
                storage, why = disk.mode()
                where = f"{kind} (loop, {storage} workspaces{': ' + why if why else ''})"
                found, small, large = one_child_rows(where, n_small, n_large)
            finally:
                set_runtime_root(None)
        rows += found
        best[kind] = (small, large)
    return rows, best


def run(quick: bool = False, cow: bool = False) -> list[Row]:
    n_small = 5 if quick else 20
    n_large = 2 if quick else 5
    rounds = 1 if quick else 3
    print(f"fork: {n_small} forks at 1 MB, {n_large} at 500 MB, {rounds} round(s) of "
          f"fork({CHILDREN}) against replay of {PREFIX_STEPS} steps"
          f"{', and again on loop btrfs and XFS' if cow else ''}; {load_note()}")
    rows, small, large = one_child_rows("the default runtime root", n_small, n_large)
    best: Found = {"default": (small, large)}
    if cow:
        more, found = cow_rows(n_small, n_large)
        rows += more
        best.update(found)
    cold_small, ready_small = env_fork_small(n_small)
    forks = fork_against_replay(rounds)
    rows.append(["-- env level, default runtime root", "", ""])
    rows.append(_row("env.fork(1) (1 MB, child env built too), cold", cold_small))
    rows.append(_row("env.fork(1) (1 MB, child env built too), spare ready", ready_small))
    rows.append(_row(f"env.fork({CHILDREN}) at step {PREFIX_STEPS}, cold", forks["cold"]))
    rows.append(_row(f"env.fork({CHILDREN}) at step {PREFIX_STEPS}, {CHILDREN} spares ready",
                     forks["ready"]))
    rows.append(_row(f"{CHILDREN} x (reset + {PREFIX_STEPS} steps)", forks["replays"]))
    rows.append(_row(f"{CHILDREN} x reset(replay=prefix), cache hits", forks["cached"]))
    print(table(["what", "median ms", "p95 ms"], rows))
    summary = []
    for where, (small_times, large_times) in best.items():
        for size, values, target in (("1 MB", small_times, TARGET_SMALL_MS),
                                     ("500 MB", large_times, TARGET_LARGE_MS)):
            one = ms(median(values))
            summary.append(Row(
                f"fork of one child, {size} workspace, spare ready, {where} (median ms)",
                f"{one:.1f} (p95 {ms(percentile(values, 95)):.1f})", "-", "-",
                f"<= {target:g} ms", one <= target))
    for label in ("cold", "ready"):
        ratio = median(forks["replays"]) / median(forks[label])
        summary.append(Row(
            f"fork({CHILDREN}) ({label}) vs {CHILDREN} resets replaying {PREFIX_STEPS} steps",
            f"{ms(median(forks[label])):.0f} ms", f"{ms(median(forks['replays'])):.0f} ms",
            f"{ratio:.2f}x faster", "> 1x (a ratio)", ratio > 1.0))
    print_rows("fork", summary)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--cow", action="store_true",
                        help="also measure on loop btrfs and XFS filesystems (root)")
    args = parser.parse_args()
    run(args.quick, args.cow)


if __name__ == "__main__":
    main()
