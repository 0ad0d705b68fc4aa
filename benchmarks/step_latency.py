"""W1: latency of one ``echo hi`` step in a ready env, beside the bare-bwrap-shell floor.

Layers timed in the same run, interleaved round by round so machine load hits them alike:

- ``env.step``: through ``taskgym.make`` (Gymnasium wrappers included), what a trainer calls;
- ``env.unwrapped.step``: the env without the wrappers;
- ``session.exec``: the sandbox session alone (``LocalSession.exec``);
- ``raw protocol``: taskgym's shell protocol done by hand on the session's descriptors
  (write the command file, send the trigger, read to the status line), no Python around it;
- ``floor``: a bare bash in an identical bwrap sandbox, ``echo hi; echo SENTINEL`` over pipes.

Each layer also gets its CPU per step (this Python process, and the sandbox's processes),
and the pure-Python pieces of a step are timed alone, to show where overhead goes.

Target: median(env.step) - median(floor) <= 0.15 ms.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import select
import sys
import time
import timeit
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
from _floor import FloorShell, python_cpu, sandbox_cpu, sandbox_pids  # noqa: E402

import taskgym  # noqa: E402
from taskgym.core.env_step import describe as _describe  # noqa: E402
from taskgym.core.tool import ActionError, parse_action  # noqa: E402
from taskgym.sandbox import ExecResult  # noqa: E402
from taskgym.sandbox.shell.commands import SOURCE_TRIGGER, ending  # noqa: E402
from taskgym.sandbox.shell.protocol import read_capped  # noqa: E402
from taskgym.tools.shell import format_exec  # noqa: E402

TARGET_MS = 0.15
MAIN = "env.step (taskgym.make)"
FLOOR = "floor (bare bash in bwrap)"
ACTION: dict[str, Any] = {"tool": "bash", "args": {"command": "echo hi"}}


def raw_tg(session: Any) -> Callable[[], None]:
    """One ``echo hi`` through taskgym's protocol by hand, on ``session``'s own descriptors:
    command file, trigger, status line, stdout file."""
    cmd_fd, ctl, status_fd, out_fd = session._cmd_fd, session._ctl, session._status, session._out_fd
    tag = session._tag
    data = b"echo hi"
    poll = select.poll()
    poll.register(status_fd, select.POLLIN)

    def step() -> None:
        session._seq += 1  # the number the status line must carry, as exec would send it
        os.ftruncate(out_fd, 0)
        os.pwrite(cmd_fd, data, 0)
        os.ftruncate(cmd_fd, len(data))
        os.write(ctl, SOURCE_TRIGGER + ending(session._seq))
        buf = b""
        while not (tag in buf and buf.endswith(b"\n")):
            poll.poll()
            buf += os.read(status_fd, 4096)
        os.pread(out_fd, 16385, 0)

    return step


def _time(fn: Callable[[], object], n: int, out: list[float]) -> None:
    clock = time.perf_counter
    for _ in range(n):
        t0 = clock()
        fn()
        out.append(clock() - t0)


def _hot(fn: Callable[[], object], n: int) -> float:
    """Microseconds per call in a hot loop (best of 5 runs of ``n``)."""
    return min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6


def pieces(env: Any, n: int) -> list[list[str]]:
    """Pure-Python costs of a step's pieces, each timed alone in a hot loop."""
    inner = env.unwrapped
    tools = inner._tools_by_name
    session = inner.session
    call = parse_action(ACTION, tools)
    assert not isinstance(call, ActionError)
    canned = session.exec("echo hi")
    data = b"echo hi"

    def rewind(fn: Callable[[], object]) -> Callable[[], object]:
        def go() -> object:
            inner._steps = 0
            return fn()
        return go

    rows: list[tuple[str, Callable[[], object]]] = [
        ("parse_action (dict -> pydantic BashArgs)", lambda: parse_action(ACTION, tools)),
        ("TaskEnv.limits(task), max_steps overridden (model_copy)",
         lambda: inner.limits(inner.task)),
        ("format_exec(result)", lambda: format_exec(canned)),
        ("repr(action) for the transcript (_describe)", lambda: _describe(ACTION)),
        ("os.pwrite command file", lambda: os.pwrite(session._cmd_fd, data, 0)),
        ("os.pwrite + os.ftruncate command file",
         lambda: (os.pwrite(session._cmd_fd, data, 0), os.ftruncate(session._cmd_fd, 7))),
        ("read stdout and stderr files: 2x read_capped",
         lambda: (read_capped(session._out_fd, 0, 16384), read_capped(session._err_fd, 0, 16384))),
        ("ExecResult", lambda: ExecResult(stdout="hi\n", stderr="", exit_code=0, duration_sec=0.0)),
    ]
    out = [[name, f"{_hot(fn, n):.2f}"] for name, fn in rows]
    session.exec = lambda command, timeout=None: canned  # stub: the env layers alone
    try:
        out.append(["bash tool.run, session.exec stubbed",
                    f"{_hot(lambda: call.tool.run(call.args), n):.2f}"])
        out.append(["env.unwrapped.step, session.exec stubbed",
                    f"{_hot(rewind(lambda: inner.step(ACTION)), n):.2f}"])
        out.append(["env.step (wrappers), session.exec stubbed",
                    f"{_hot(rewind(lambda: env.step(ACTION)), n):.2f}"])
    finally:
        del session.exec
    return out


def profile_steps(env: Any, n: int, top: int = 18) -> str:
    """cProfile of ``n`` env.step calls, sorted by own time, with per-call microseconds."""
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        env.step(ACTION)
    prof.disable()
    stats = pstats.Stats(prof, stream=io.StringIO())
    items = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:top]  # type: ignore[attr-defined]
    rows = []
    for (filename, line, name), (_cc, ncalls, tottime, cumtime, _callers) in items:
        where = f"{Path(filename).name}:{line} {name}" if line else name
        rows.append([where[:70], f"{ncalls / n:.1f}", f"{tottime / n * 1e6:.1f}",
                     f"{cumtime / n * 1e6:.1f}"])
    return table(["function", "calls/step", "own us/step", "cum us/step"], rows)


def _session_pids(session: Any) -> list[int]:
    return [session._proc.proc.pid, *sandbox_pids(session._proc.pidns)]


def run(quick: bool = False, profile: bool = False) -> list[Row]:
    n = 600 if quick else 3000
    rounds = 6 if quick else 15
    per = n // rounds
    print(f"step latency: {n} steps per layer in {rounds} interleaved rounds; {load_note()}")
    env = taskgym.make(ENV_ID, max_steps=10**9)  # the task allows 60 steps; we take 3000+
    plain = taskgym.make(ENV_ID)  # the task's own max_steps: its step counter is rewound
    floor = FloorShell()
    try:
        env.reset(options={"task_id": TASK_ID})
        plain.reset(options={"task_id": TASK_ID})
        session = env.unwrapped.session
        floor.ready()

        def plain_step() -> object:
            plain.unwrapped._steps = 0
            return plain.step(ACTION)

        ours, theirs = _session_pids(session), floor.pids()
        layers: dict[str, tuple[Callable[[], object], list[int]]] = {
            MAIN: (lambda: env.step(ACTION), ours),
            "env.step, task's own max_steps": (plain_step, _session_pids(plain.unwrapped.session)),
            "env.unwrapped.step": (lambda: env.unwrapped.step(ACTION), ours),
            "session.exec": (lambda: session.exec("echo hi"), ours),
            "raw protocol by hand": (raw_tg(session), ours),
            FLOOR: (floor.send, theirs),
        }
        obs = env.step(ACTION)[0]["text"]
        assert obs == "hi\n[exit code 0]", obs
        assert floor.send() == b"hi\n"
        samples: dict[str, list[float]] = {k: [] for k in layers}
        py_cpu = dict.fromkeys(layers, 0.0)
        sb_cpu = dict.fromkeys(layers, 0.0)
        for fn, _pids in layers.values():  # warm up
            _time(fn, 200, [])
        for _ in range(rounds):
            for name, (fn, pids) in layers.items():
                py0, sb0 = python_cpu(), sandbox_cpu(pids)
                _time(fn, per, samples[name])
                py_cpu[name] += python_cpu() - py0
                sb_cpu[name] += sandbox_cpu(pids) - sb0
        floor_med = median(samples[FLOOR])
        floor_p95 = percentile(samples[FLOOR], 95)
        rows = []
        for name, values in samples.items():
            med, p95 = median(values), percentile(values, 95)
            rows.append([name, f"{ms(med):.4f}", f"{ms(p95):.4f}", f"{ms(med - floor_med):+.4f}",
                         f"{py_cpu[name] / len(values) * 1e6:.1f}",
                         f"{sb_cpu[name] / len(values) * 1e6:.1f}"])
        print(table(["layer", "median ms", "p95 ms", "median - floor", "host py CPU us/step",
                     "sandbox CPU us/step"], rows))
        print("(CPU per step bounds parallel throughput: W4 ~ cores / (host + sandbox CPU);"
              " the host part also holds the GIL)")
        print("\npieces of a step, pure Python, each alone in a hot loop (us per call; in a "
              "real step, with cold caches, expect 2-3x):")
        print(table(["piece", "us"], pieces(env, 2000 if quick else 10000)))
        env_med = median(samples[MAIN])
        env_p95 = percentile(samples[MAIN], 95)
        diff = ms(env_med - floor_med)
        passed = diff <= TARGET_MS
        if profile or not passed:
            print("\ncProfile of env.step (per step; the profiler inflates Python time):")
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
        plain.close()
        env.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--profile", action="store_true", help="always print a cProfile")
    args = parser.parse_args()
    run(args.quick, args.profile)


if __name__ == "__main__":
    main()
