"""The TRL adapter's cost per tool call: an ``echo hi`` through TRL's path beside ``env.step``.

TRL 1.16 runs a tool call as ``tool_dict[name](**arguments)``: the bound method of the
object ``environment_factory`` made (``taskgym.integrations.trl``), which takes the object's
lock, checks the episode is running, calls ``env.step`` and returns the observation's text.
Timed against ``env.step`` on an env made the same way, round by round in one run so that
machine load hits both alike; each round times ``--calls`` calls of each, the two in
turns (each first in every other round).

The adapter's own work is also timed alone, with the env's ``step`` replaced by a stub that
returns at once, against calling that stub directly: the microseconds the adapter adds,
free of the shell's noise. The ratio it implies is (env.step + added) / env.step.

Targets: the measured ratio <= 1.05, or (on a loaded machine, where two medians of the same
shell differ by more than that) the implied ratio <= 1.05; and at most 5 us added per call.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ENV_ID, TASK_ID, Row, load_note, median, ms, print_rows  # noqa: E402

import taskgym  # noqa: E402
from taskgym.integrations import env_of  # noqa: E402
from taskgym.integrations.trl import environment_factory  # noqa: E402

TARGET_RATIO = 1.05
TARGET_ADDED_US = 5.0
ARGUMENTS = {"command": "echo hi"}


def run(quick: bool = False, rounds: int | None = None, calls: int = 20) -> list[Row]:
    rounds = rounds or (10 if quick else 40)
    adapter = environment_factory(ENV_ID, max_steps=10**6)()
    direct = taskgym.make(ENV_ID, max_steps=10**6)
    tool = adapter.bash  # what TRL's tool dict holds
    action = {"tool": "bash", "args": dict(ARGUMENTS)}
    through_trl: list[float] = []
    through_step: list[float] = []
    try:
        adapter.reset(task_id=TASK_ID)
        direct.reset(options={"task_id": TASK_ID})
        for _ in range(calls):  # warm both shells
            tool(**ARGUMENTS)
            direct.step(action)
        for index in range(rounds):  # each path goes first in every other round
            for path in ((0, 1) if index % 2 == 0 else (1, 0)):
                start = time.perf_counter()
                for _ in range(calls):
                    if path == 0:
                        tool(**ARGUMENTS)
                    else:
                        direct.step(action)
                elapsed = (time.perf_counter() - start) / calls
                (through_trl if path == 0 else through_step).append(elapsed)
        assert env_of(adapter).unwrapped.steps_taken == direct.unwrapped.steps_taken
    finally:
        adapter._close()
        direct.close()
    trl_ms, step_ms = ms(median(through_trl)), ms(median(through_step))
    ratio = trl_ms / step_ms
    added_us = adapter_cost_us(rounds)
    implied = (step_ms + added_us / 1000) / step_ms
    print(f"\nTRL adapter, {rounds} rounds of {calls} calls each; {load_note()}")
    print(f"  adapter call (TRL's path): median {trl_ms:.3f} ms per call")
    print(f"  env.step:                  median {step_ms:.3f} ms per call")
    print(f"  the adapter's own work:    {added_us:.2f} us per call (stubbed step)")
    return [Row("TRL tool call vs env.step (echo hi)", f"{trl_ms:.3f} ms", f"{step_ms:.3f} ms",
                f"x{ratio:.3f} measured, x{implied:.4f} implied", f"<= x{TARGET_RATIO}",
                ratio <= TARGET_RATIO or implied <= TARGET_RATIO),
            Row("TRL adapter's own work per call", f"{added_us:.2f} us", "0 us",
                f"+{added_us:.2f} us", f"<= {TARGET_ADDED_US} us", added_us <= TARGET_ADDED_US)]


class StubEnv:
    """Answers every step at once, as a finished tool call would."""

    result = ({"text": "hi\n[exit code 0]"}, 0.0, False, False, {"step": 1})

    def step(self, action: object) -> tuple[object, ...]:
        return self.result


def adapter_cost_us(rounds: int, calls: int = 2000) -> float:
    """Microseconds the adapter adds to a call: its method on a stub env, minus the stub."""
    adapter = environment_factory(ENV_ID)()
    adapter.reset(task_id=TASK_ID)
    env_of(adapter).close()
    stub = StubEnv()
    adapter._env = stub  # type: ignore[assignment]  # the real env is closed; time the rest
    tool, action = adapter.bash, {"tool": "bash", "args": dict(ARGUMENTS)}
    added = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            tool(**ARGUMENTS)
        through = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(calls):
            stub.step(action)
        added.append((through - (time.perf_counter() - start)) / calls)
    return median(added) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--calls", type=int, default=20, help="calls per round and path")
    args = parser.parse_args()
    rows = run(args.quick, args.rounds, args.calls)
    print_rows("TRL adapter overhead", rows)
    sys.exit(0 if all(r.passed for r in rows) else 1)


if __name__ == "__main__":
    main()
