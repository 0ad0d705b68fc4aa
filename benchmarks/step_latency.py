"""W1: latency of one ``echo hi`` step in a ready env, beside the bare-bwrap-shell floor.

Layers timed in the same run, interleaved round by round so machine load hits them alike:

- ``env.step``: through ``taskgym.make`` (Gymnasium wrappers included), what a trainer calls;
- ``env.unwrapped.step``: the env without the wrappers;
- ``session.exec``: the sandbox session alone (``LocalSession.exec``);
- ``raw __tg``: taskgym's shell protocol done by hand on the session's descriptors
  (write the command file, send ``__tg``, read to the marker), no Python around it;
- ``floor``: a bare bash in an identical bwrap sandbox, ``echo hi; echo SENTINEL`` over pipes.

Target: median(env.step) - median(floor) <= 0.15 ms.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import (  # noqa: E402
    ENV_ID,
    TASK_ID,
    Row,
    load_note,
    median,
    ms,
    percentile,
    print_rows,
    table,
)
from _floor import FloorShell  # noqa: E402

import taskgym  # noqa: E402
from taskgym.core.tool import parse_action  # noqa: E402
from taskgym.tools.shell import format_exec  # noqa: E402

TARGET_MS = 0.15
ACTION: dict[str, Any] = {"tool": "bash", "args": {"command": "echo hi"}}


def raw_tg(session: Any) -> Callable[[], None]:
    """One ``echo hi`` through taskgym's protocol by hand, on ``session``'s own descriptors."""
    cmd_fd, ctl, out_fd = session._cmd_fd, session._ctl, session._stdout
    marker = b"\n" + session._tag
    data = b"echo hi"

    def step() -> None:
        os.pwrite(cmd_fd, data, 0)
        os.ftruncate(cmd_fd, len(data))
        os.write(ctl, b"__tg\n")
        buf = b""
        while True:
            buf += os.read(out_fd, 65536)
            idx = buf.find(marker)
            if idx >= 0 and buf.endswith(b"\n") and len(buf) > idx + len(marker):
                return

    return step


def _time(fn: Callable[[], object], n: int, out: list[float]) -> None:
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)


def profile_steps(env: Any, n: int, top: int = 18) -> str:
    """cProfile of ``n`` env.step calls, sorted by own time, with per-call microseconds."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        env.step(ACTION)
    prof.disable()
    stream = io.StringIO()
    stats = pstats.Stats(prof, stream=stream)
    stats.sort_stats("tottime")
    rows = []
    for func, (_cc, ncalls, tottime, cumtime, _callers) in sorted(
        stats.stats.items(), key=lambda kv: -kv[1][2]  # type: ignore[attr-defined]
    )[:top]:
        filename, line, name = func
        where = f"{Path(filename).name}:{line} {name}" if line else name
        rows.append([where[:70], f"{ncalls / n:.1f}", f"{tottime / n * 1e6:.1f}",
                     f"{cumtime / n * 1e6:.1f}"])
    return table(["function", "calls/step", "own us/step", "cum us/step"], rows)


def split_layers(env: Any, n: int) -> list[list[str]]:
    """perf_counter splits of the pieces of one step, each timed alone (microseconds)."""
    inner = env.unwrapped
    tools = inner._tools_by_name
    session = inner.session
    call = parse_action(ACTION, tools)
    result = session.exec("echo hi")
    pieces: dict[str, Callable[[], object]] = {
        "parse_action (pydantic validation)": lambda: parse_action(ACTION, tools),
        "bash tool run (max_timeout + exec + format)": lambda: call.tool.run(call.args),
        "format_exec": lambda: format_exec(result),
        "limits(task) (model_copy when max_steps set)": lambda: inner.limits(inner.task),
        "remaining_seconds": inner.remaining_seconds,
    }
    rows = []
    for name, fn in pieces.items():
        samples: list[float] = []
        _time(fn, n, samples)
        rows.append([name, f"{median(samples) * 1e6:.1f}"])
    return rows


def run(quick: bool = False, profile: bool = False) -> list[Row]:
    n = 600 if quick else 3000
    rounds = 6 if quick else 15
    per = n // rounds
    print(f"step latency: {n} steps per layer in {rounds} interleaved rounds; {load_note()}")
    env = taskgym.make(ENV_ID, max_steps=10**9)
    floor = FloorShell()
    try:
        env.reset(options={"task_id": TASK_ID})
        session = env.unwrapped.session
        floor.ready()
        layers: dict[str, Callable[[], object]] = {
            "env.step (taskgym.make)": lambda: env.step(ACTION),
            "env.unwrapped.step": lambda: env.unwrapped.step(ACTION),
            "session.exec": lambda: session.exec("echo hi"),
            "raw __tg protocol": raw_tg(session),
            "floor (bare bash in bwrap)": floor.send,
        }
        obs = env.step(ACTION)[0]["text"]
        assert obs == "hi\n[exit code 0]", obs
        assert floor.send() == b"hi\n"
        samples: dict[str, list[float]] = {k: [] for k in layers}
        for fn in layers.values():  # warm up
            _time(fn, 200, [])
        for _ in range(rounds):
            for name, fn in layers.items():
                _time(fn, per, samples[name])
        floor_med = median(samples["floor (bare bash in bwrap)"])
        floor_p95 = percentile(samples["floor (bare bash in bwrap)"], 95)
        rows = []
        for name, values in samples.items():
            med, p95 = median(values), percentile(values, 95)
            rows.append([name, f"{ms(med):.4f}", f"{ms(p95):.4f}",
                         f"{ms(med - floor_med):+.4f}", f"{ms(p95 - floor_p95):+.4f}"])
        print(table(["layer", "median ms", "p95 ms", "median - floor", "p95 - floor"], rows))
        print("\nwhere the time goes, pieces timed alone (median us):")
        print(table(["piece", "us"], split_layers(env, 500 if quick else 2000)))
        env_med = median(samples["env.step (taskgym.make)"])
        env_p95 = percentile(samples["env.step (taskgym.make)"], 95)
        diff = ms(env_med - floor_med)
        passed = diff <= TARGET_MS
        if profile or not passed:
            print("\ncProfile of env.step (per step):")
            print(profile_steps(env, 500 if quick else 2000))
        summary = [Row(
            "W1 step latency `echo hi` (median / p95 ms)",
            f"{ms(env_med):.3f} / {ms(env_p95):.3f}",
            f"{ms(floor_med):.3f} / {ms(floor_p95):.3f}",
            f"{diff:+.3f} ms",
            f"difference <= {TARGET_MS} ms",
            passed,
        )]
        print_rows("step latency", summary)
        return summary
    finally:
        floor.close()
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--profile", action="store_true", help="always print a cProfile")
    args = parser.parse_args()
    run(args.quick, args.profile)


if __name__ == "__main__":
    main()
