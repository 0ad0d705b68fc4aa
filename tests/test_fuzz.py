"""Fuzzing step(): thousands of garbage actions per env, on each backend, never raise.

The actions come from :func:`taskgym.fuzz.garbage_actions` (the same generator
``check_task_env`` uses). Most are refused at parse time; a sample are well-typed calls with
odd text and extreme numbers that really run the tools, ``submit`` included. After the
garbage, a real command must still run.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import taskgym
from taskgym.checks import host_state
from taskgym.core.spaces import ToolCallSpace
from taskgym.core.tool import ActionError, ToolCall, parse_action, submit_tool
from taskgym.fuzz import fuzz_env, garbage_actions
from taskgym.sandbox import Backend
from taskgym.sandbox.local import LocalBackend
from taskgym.sandbox.shell.plans import drive_plans
from taskgym.tools.shell import shell_tools

ACTIONS = 2000
# the share of actions that run a tool: cad's run a CadQuery worker and grade a part
# (seconds each), so it gets fewer of them
EXECUTE = {"coding-terminal-v0": 0.02, "finance-pdf-v0": 0.02, "cad-cadquery-v0": 0.01,
           "mesh-trimesh-v0": 0.02, "game-godot-v0": 0.02}
WORKS = {  # a real call each env must still answer after the garbage
    "coding-terminal-v0": ({"tool": "bash", "args": {"command": "echo still $((6*7))"}},
                           "still 42\n[exit code 0]"),
    "cad-cadquery-v0": ({"tool": "bash", "args": {"command": "echo still $((6*7))"}},
                        "still 42\n[exit code 0]"),
    "finance-pdf-v0": ({"tool": "python", "args": {"code": "print('still', 6 * 7)"}},
                       "still 42\n[exit code 0]"),
    "mesh-trimesh-v0": ({"tool": "bash", "args": {"command": "echo still $((6*7))"}},
                        "still 42\n[exit code 0]"),
    "game-godot-v0": ({"tool": "bash", "args": {"command": "echo still $((6*7))"}},
                      "still 42\n[exit code 0]"),
}


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(EXECUTE))
def test_garbage_never_raises_and_the_env_still_works(env_id: str, backend: Backend,
                                                      tmp_path: Path, answer_task: Any) -> None:
    kwargs: dict[str, Any] = {"sandbox": backend, "max_steps": 10 * ACTIONS}
    if env_id == "coding-terminal-v0":  # a task whose grading takes a second, not a C build
        kwargs["tasks"] = str(answer_task(tmp_path / "answer").parent)
    env = taskgym.make(env_id, **kwargs)
    try:
        report = fuzz_env(env, ACTIONS, seed=2026, execute=EXECUTE[env_id])
        assert report.problems == []
        assert report.steps == ACTIONS
        assert report.refused > 0.9 * ACTIONS  # the garbage is garbage
        assert report.steps - report.refused > 0.3 * EXECUTE[env_id] * ACTIONS  # some ran
        assert report.episodes >= 2  # submits ended episodes, and the env reset after them
        print(f"\n{env_id} on {type(backend).__name__}: {report.steps} steps, "
              f"{report.refused} refused, {report.errors} errors, {report.episodes} episodes, "
              f"{report.seconds:.1f}s")
        env.reset(seed=0)
        action, expected = WORKS[env_id]
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs["text"] == expected and "error" not in info
    finally:
        env.close()



@pytest.mark.parametrize("how", ["astep", "step and astep mixed", "poll_step"])
def test_garbage_through_astep_never_raises_and_leaks_nothing(
        how: str, backend: Backend, tmp_path: Path, answer_task: Any) -> None:
    """The same garbage through the async path (``areset`` / ``astep`` on one event loop),
    through ``step`` and ``astep`` in a seeded mix on one env, and as plans (``poll_step``,
    what the vector env's loop drives); nothing is left afterwards."""
    env = taskgym.make("coding-terminal-v0", sandbox=backend, max_steps=10 * ACTIONS,
                       tasks=str(answer_task(tmp_path / "answer").parent))
    inner = env.unwrapped
    loop = asyncio.new_event_loop()
    mix = random.Random(7)
    fds, before = len(os.listdir("/proc/self/fd")), host_state()

    def step(action: Any) -> Any:
        if how == "poll_step":
            [stepped] = drive_plans([env.poll_step(action)])  # type: ignore[attr-defined]
            if isinstance(stepped, Exception):
                raise stepped
            return stepped
        if how == "astep" or mix.random() < 0.5:
            return loop.run_until_complete(inner.astep(action))  # type: ignore[attr-defined]
        return inner.step(action)

    def reset() -> Any:
        return loop.run_until_complete(inner.areset(seed=2026))  # type: ignore[attr-defined]

    try:
        report = fuzz_env(env, ACTIONS, seed=2026, execute=EXECUTE["coding-terminal-v0"],
                          reset=reset, step=step)
        assert report.problems == []
        assert report.steps == ACTIONS and report.refused > 0.9 * ACTIONS
        assert report.steps - report.refused > 0.3 * EXECUTE["coding-terminal-v0"] * ACTIONS
        assert report.episodes >= 2
        reset()
        action, expected = WORKS["coding-terminal-v0"]
        obs, _reward, _terminated, _truncated, info = step(action)
        assert obs["text"] == expected and "error" not in info
    finally:
        loop.run_until_complete(inner.aclose())  # type: ignore[attr-defined]
        loop.close()
        env.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and host_state() - before:
        time.sleep(0.1)
    assert host_state() - before == set()
    if isinstance(backend, LocalBackend):  # the docker backend refills its pool meanwhile
        assert len(os.listdir("/proc/self/fd")) <= fds


def _tools() -> dict[str, Any]:
    def no_session() -> Any:
        raise AssertionError("parsing must not touch the session")

    return {t.name: t for t in [*shell_tools(no_session, lambda: 1.0), submit_tool()]}


def _fingerprint(action: Any) -> Any:
    """Enough of an action to tell two apart (a repr could recurse too deep)."""
    if isinstance(action, (str, bytes)):
        return action
    if isinstance(action, dict):
        return sorted(map(str, action)), [type(v).__name__ for v in action.values()]
    return type(action).__name__


def test_garbage_is_seeded_and_refused() -> None:
    tools = _tools()
    first = [_fingerprint(a) for a in garbage_actions(tools, 300, seed=5, execute=0.0)]
    again = [_fingerprint(a) for a in garbage_actions(tools, 300, seed=5, execute=0.0)]
    other = [_fingerprint(a) for a in garbage_actions(tools, 300, seed=6, execute=0.0)]
    assert first == again and first != other
    for action in garbage_actions(tools, 300, seed=5, execute=0.0):
        assert isinstance(parse_action(action, tools), ActionError)
    calls = [parse_action(a, tools) for a in garbage_actions(tools, 300, seed=5, execute=1.0)]
    assert sum(isinstance(c, ToolCall) for c in calls) > 150  # mostly valid, with odd values


def test_garbage_covers_every_kind() -> None:
    tools = _tools()
    seen = [a for a in garbage_actions(tools, 2000, seed=1, execute=0.0)]
    kinds = {type(a).__name__ for a in seen}
    assert {"dict", "str", "bytes", "SimpleNamespace", "_Raising", "_RaisingDict"} <= kinds
    texts = [a for a in seen if isinstance(a, str)]
    assert any(len(t) > 1_000_000 for t in texts)
    assert any("\\ud8" in t or "\\udc" in t or "\\udf" in t for t in texts)  # JSON escapes
    assert any(t.startswith("[[[[") for t in texts)
    assert any(type(a) is dict and a.get("tool") in tools for a in seen)
    assert any(type(a) is dict and isinstance(a.get("function"), dict) for a in seen)


# -- hypothesis, on the parser alone (no sandbox): any JSON-like value, any Unicode ---------

_ANY_TEXT = st.text(st.characters(codec=None), max_size=30)  # lone surrogates included
_LEAVES = (st.none() | st.booleans() | st.integers() | st.floats() | _ANY_TEXT
           | st.binary(max_size=20))
_VALUES = st.recursive(_LEAVES, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(_ANY_TEXT, inner, max_size=4), max_leaves=20)
_NAMES = st.sampled_from(["bash", "read_file", "write_file", "submit"]) | _ANY_TEXT
_ACTIONS = (_VALUES
            | st.builds(lambda n, a: {"tool": n, "args": a}, _NAMES, _VALUES)
            | st.builds(lambda n, a: {"function": {"name": n, "arguments": a}}, _NAMES,
                        _VALUES.map(lambda v: json.dumps(v, default=repr)) | _VALUES)
            | st.builds(lambda n, a: json.dumps({"tool": n, "args": a}, default=repr), _NAMES,
                        _VALUES))


_TOOLS = _tools()
_SPACE = ToolCallSpace(list(_TOOLS.values()))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_ACTIONS)
def test_parse_action_never_raises_and_only_passes_utf8(action: Any) -> None:
    tools = _TOOLS
    result = parse_action(action, tools)
    if isinstance(result, ActionError):
        result.message.encode("utf-8")
    else:
        json.dumps(result.args.model_dump(), ensure_ascii=False).encode("utf-8")
    assert _SPACE.contains(action) is isinstance(result, ToolCall)
