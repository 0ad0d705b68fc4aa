"""Garbage actions, and playing them against an env to check that ``step()`` holds.

:func:`garbage_actions` draws, from a seed, what a policy (or a broken client) might send
instead of a good tool call: random JSON, wrong types, lone surrogates and other odd
Unicode, binary bytes, huge and deeply nested values, JSON strings that are invalid, OpenAI
``tool_call`` objects with garbage, and real tool names with garbage arguments. A small
share are well-typed calls with odd text, which really run the tools.

:func:`fuzz_env` steps an env through them and reports every broken promise: an exception,
a crash (``info["crash"]``), an observation outside the observation space or not UTF-8, an
error message that differs from what :func:`~taskgym.core.tool.parse_action` says.
``tests/test_fuzz.py`` and :func:`taskgym.check_task_env` both use them.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import gymnasium as gym

from taskgym.core.spaces import ToolCallSpace
from taskgym.core.tool import MAX_ACTION_CHARS, ActionError, Tool, parse_action

__all__ = ["FuzzReport", "fuzz_env", "garbage_actions"]

_ODD_TEXT = ["", " ", "\x00", "\ud800", "\udfff", "a\udc80b", "\ud83d", "\ufeff", "\u202e",
             "\u0301", "😀", "\x1b[31m\x07", "\r\n", "../" * 20, "/etc/passwd", "null", "{}",
             "%s%n", "${HOME}", "$(id)", "'\"`", "\\", "\U0010ffff", "\ufffe"]
_ODD_VALUES: list[Any] = [None, True, False, 0, -1, 1, 2**31, 2**63, -(2**63) - 1, 10**400,
                          1e308, -1e308, float("nan"), float("inf"), -0.0, 3.5, b"", b"\xff\xfe",
                          b"\x00\x01", bytearray(b"x"), (), [], {}, [None], {"": None},
                          SimpleNamespace(), object()]
_KEYS = ["tool", "name", "args", "arguments", "function", "id", "type", "tool_call", ""]
_KINDS = ["json_value", "dict", "bad_json", "json_text", "bytes", "huge", "nested", "openai",
          "sdk", "raising", "real_tool", "real_tool", "real_tool"]


def _dumps(value: Any, ascii_only: bool = True) -> str:
    """``value`` as JSON text, whatever it holds (odd keys skipped, odd values as repr)."""
    return json.dumps(value, default=repr, skipkeys=True, ensure_ascii=ascii_only)


class _Raising:
    """An object whose every attribute raises, like a broken SDK object."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"no attribute {name} today")


class _RaisingDict(dict[str, Any]):
    """A dict whose look-ups raise."""

    def get(self, *args: Any) -> Any:
        raise LookupError("get refused")

    def __getitem__(self, key: str) -> Any:
        raise LookupError("getitem refused")


class _Generator:
    def __init__(self, tools: Sequence[Tool], seed: int, execute: float) -> None:
        self.rng = random.Random(seed)
        self.tools = list(tools)
        self.by_name = {t.name: t for t in self.tools}
        self.execute = execute
        self.space = ToolCallSpace(self.tools, seed=seed)

    # -- building blocks -----------------------------------------------------------------
    def text(self, longest: int = 40, surrogates: bool = True) -> str:
        rng = self.rng
        parts = []
        for _ in range(rng.randint(0, 4)):
            pick = rng.random()
            if pick < 0.35:
                parts.append(rng.choice(_ODD_TEXT))
            elif pick < 0.6:
                parts.append("".join(chr(rng.randint(32, 126)) for _ in range(rng.randint(1, longest))))
            elif pick < 0.8:
                parts.append("".join(chr(rng.randint(0, 0x10FFFF)) for _ in range(rng.randint(1, 8))))
            else:
                parts.append("".join(chr(rng.randint(0, 31)) for _ in range(rng.randint(1, 4))))
        text = "".join(parts)
        if not surrogates:
            text = text.encode("utf-8", "replace").decode("utf-8")
        return text

    def value(self, depth: int = 0) -> Any:
        rng = self.rng
        pick = rng.random()
        if depth > 3 or pick < 0.35:
            return rng.choice(_ODD_VALUES)
        if pick < 0.6:
            return self.text()
        if pick < 0.7:
            return rng.uniform(-1e6, 1e6) if rng.random() < 0.5 else rng.randint(-10**6, 10**6)
        if pick < 0.85:
            return [self.value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {self.key(): self.value(depth + 1) for _ in range(rng.randint(0, 4))}

    def key(self) -> Any:
        pick = self.rng.random()
        if pick < 0.5:
            return self.rng.choice(_KEYS)
        if pick < 0.9:
            return self.text(12)
        return self.rng.choice([0, None, 1.5, True, b"k", ("t",)])

    def tool_name(self) -> Any:
        rng = self.rng
        pick = rng.random()
        if pick < 0.6 and self.tools:
            name = rng.choice(self.tools).name
            return name if rng.random() < 0.7 else name + rng.choice(["\ud800", " ", "\x00", "_", "S"])
        return self.value() if pick < 0.8 else self.text(20)

    def real_args(self, tool: Tool) -> Any:
        """Arguments for ``tool``: its own names, garbage values, sometimes missing or extra."""
        rng = self.rng
        if rng.random() < 0.1:
            return self.value()
        args: dict[Any, Any] = {}
        for name in tool.args.model_fields:
            if rng.random() < 0.85:
                args[name] = self.value() if rng.random() < 0.7 else self.text()
        if rng.random() < 0.2 or not args:  # an empty object would be a valid call, often
            args[self.key()] = self.value()
        return args

    def well_typed(self) -> dict[str, Any]:
        """A call of the right types with odd (but UTF-8) text and extreme numbers: most are
        valid, and run the tool."""
        rng = self.rng
        call = self.space.sample()
        for name, value in list(call["args"].items()):
            if rng.random() < 0.6:
                if isinstance(value, str):
                    call["args"][name] = self.text(surrogates=False)[:40] or "x"
                elif isinstance(value, int) and not isinstance(value, bool):
                    call["args"][name] = rng.choice([0, -1, 2**31, 2**63, 10**400, -(10**400)])
                elif isinstance(value, float):
                    call["args"][name] = rng.choice([float("nan"), float("inf"), -float("inf"),
                                                     1e308, -0.0, 5e-324])
        return call

    # -- whole actions ---------------------------------------------------------------------
    def action(self) -> Any:
        if self.tools and self.rng.random() < self.execute:
            return self.well_typed()
        for _ in range(5):  # garbage that happens to be a valid call is drawn again
            made: Any = getattr(self, f"_{self.rng.choice(_KINDS)}")()
            if isinstance(parse_action(made, self.by_name), ActionError):
                break
        else:
            made = {"tool": None}
        return made

    def _json_value(self) -> Any:
        return self.value()

    def _dict(self) -> Any:
        return {self.key(): self.value() for _ in range(self.rng.randint(0, 5))}

    def _real_tool(self) -> Any:
        rng = self.rng
        tool = rng.choice(self.tools) if self.tools else None
        name = tool.name if tool else self.text()
        args = self.real_args(tool) if tool else self.value()
        shape = rng.random()
        if shape < 0.6:
            return {"tool": name, "args": args}
        if shape < 0.8:
            return {"name": name, "arguments": args}
        return _dumps({"tool": name, "args": args}, rng.random() < 0.5)

    def _bad_json(self) -> str:
        rng = self.rng
        text = _dumps(self._real_tool())
        if not text:
            return "{"
        cut = rng.randint(0, len(text) - 1)
        how = rng.random()
        if how < 0.3:
            return text[:cut]
        if how < 0.6:
            return text[:cut] + rng.choice(["\x01", "'", "\\", "\\u", "\\ud8", ",", "}", "NaN"]) + text[cut:]
        if how < 0.8:
            return "{" + self.text()
        return rng.choice(["", " ", "{", "[", "nul", "{'tool': 'bash'}", "1" * 5000])

    def _json_text(self) -> str:
        action = self._real_tool() if self.rng.random() < 0.5 else self.value()
        if isinstance(action, str):
            return action
        return _dumps(action, self.rng.random() < 0.5)

    def _bytes(self) -> bytes:
        rng = self.rng
        if rng.random() < 0.5:
            return bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 64)))
        good = _dumps(self._real_tool()).encode("utf-8", "surrogatepass")
        cut = rng.randint(0, len(good))
        return good[:cut] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"]) + good[cut:]

    def _huge(self) -> Any:
        rng = self.rng
        tool = rng.choice(self.tools).name if self.tools else "x"
        big = "a" * (MAX_ACTION_CHARS + rng.randint(1, 1000))
        makers: list[Callable[[], Any]] = [
            lambda: big,
            lambda: {"tool": tool, "args": {"x": big}},
            lambda: {"tool": tool, "args": {"x": [["y" * 100] * 1000] * 20}},
            lambda: {"tool": tool, "args": _dumps({"x": big})},
            lambda: {"function": {"name": tool, "arguments": _dumps({"x": big})}},
            lambda: {"tool": tool, "args": {"x": 10**4000}},
        ]
        return rng.choice(makers)()

    def _nested(self) -> Any:
        rng = self.rng
        depth = rng.choice([100, 1000, 5000, 100_000])
        tool = rng.choice(self.tools).name if self.tools else "x"
        if rng.random() < 0.5 or depth > 5000:  # JSON text, or Python objects past the recursion limit
            return "[" * depth + "]" * depth if rng.random() < 0.5 else (
                '{"tool": "' + tool + '", "args": ' + '{"a":' * depth + "1" + "}" * (depth + 1))
        inner: Any = self.value()
        for _ in range(depth):
            inner = [inner] if rng.random() < 0.5 else {"k": inner}
        return {"tool": tool, "args": {"x": inner}} if rng.random() < 0.7 else inner

    def _openai(self) -> Any:
        rng = self.rng
        tool = rng.choice(self.tools) if self.tools else None
        arguments: Any
        pick = rng.random()
        if pick < 0.3 and tool is not None:
            arguments = _dumps(self.real_args(tool), rng.random() < 0.5)
        elif pick < 0.5:
            arguments = self._bad_json()
        elif pick < 0.6:
            arguments = self._bytes()
        else:
            arguments = self.value()
        function: Any = {"name": self.tool_name(), "arguments": arguments}
        if rng.random() < 0.15:
            function = self.value()
        elif rng.random() < 0.15:
            del function[rng.choice(["name", "arguments"])]
        call: dict[str, Any] = {"id": self.value() if rng.random() < 0.3 else "call_1",
                                "type": rng.choice(["function", "", None, "x"]), "function": function}
        if rng.random() < 0.2:
            call[self.key()] = self.value()
        return call

    def _sdk(self) -> Any:
        call = self._openai()
        function = call["function"]
        if isinstance(function, dict):
            function = SimpleNamespace(**{k: v for k, v in function.items()
                                          if isinstance(k, str) and k.isidentifier()})
        return SimpleNamespace(id=call["id"], type="function", function=function)

    def _raising(self) -> Any:
        rng = self.rng
        if rng.random() < 0.5:
            return _Raising()
        return _RaisingDict(tool=rng.choice(self.tools).name if self.tools else "x", args={})


def garbage_actions(tools: Sequence[Tool] | Mapping[str, Tool], count: int, seed: int = 0,
                    execute: float = 0.02) -> Iterator[Any]:
    """``count`` garbage actions for ``tools``, the same for the same ``seed``.

    ``execute`` is the share of well-typed calls with odd text and extreme numbers, most of
    which run their tool (``submit`` among them, ending episodes); every other action is
    one that :func:`parse_action` refuses.
    """
    listed = list(tools.values()) if isinstance(tools, Mapping) else list(tools)
    generator = _Generator(listed, seed, execute)
    for _ in range(count):
        yield generator.action()


@dataclass
class FuzzReport:
    """What :func:`fuzz_env` saw."""

    steps: int = 0
    refused: int = 0
    """Steps whose action :func:`parse_action` refused."""
    errors: int = 0
    """Steps with ``info["error"]`` (refused ones included)."""
    episodes: int = 1
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    """Every broken promise, with the action that caused it (empty when all held)."""


def _show(action: Any) -> str:
    try:
        text = repr(action)
    except Exception:  # an object built to raise
        text = f"<{type(action).__name__}>"
    return text if len(text) <= 300 else text[:300] + "..."


def fuzz_env(env: gym.Env[Any, Any], count: int, seed: int = 0, execute: float = 0.02,
             reset: Callable[[], Any] | None = None,
             step: Callable[[Any], Any] | None = None) -> FuzzReport:
    """Step ``env`` through ``count`` garbage actions, resetting whenever an episode ends.

    ``reset()`` starts each episode (default: ``env.reset(seed=seed)``); the first is
    started here. ``step(action)`` takes each step (default: ``env.step``; e.g. ``astep`` run
    on an event loop, to fuzz the async path). The env must be a
    :class:`~taskgym.core.env.TaskEnv` (wrapped or not).
    """
    start = reset or (lambda: env.reset(seed=seed))
    take = step or env.step
    tools: dict[str, Tool] = {t.name: t for t in env.unwrapped.tools}  # type: ignore[attr-defined]
    report = FuzzReport()
    started = time.monotonic()
    start()
    for action in garbage_actions(tools, count, seed, execute):
        report.steps += 1
        problem, ended = _one_step(env, take, action, tools, report)
        if problem is not None:
            report.problems.append(f"{problem}; action: {_show(action)}")
            if len(report.problems) >= 20:
                break
        if ended or problem is not None:
            start()
            report.episodes += 1
    report.seconds = time.monotonic() - started
    return report


def _one_step(env: gym.Env[Any, Any], step: Callable[[Any], Any], action: Any,
              tools: Mapping[str, Tool], report: FuzzReport) -> tuple[str | None, bool]:
    """(what went wrong or ``None``, whether the episode ended)."""
    try:
        obs, reward, terminated, truncated, info = step(action)
    except Exception as exc:
        return f"step() raised {type(exc).__name__}: {exc}"[:1000], True
    ended = bool(terminated) or bool(truncated)
    if not (isinstance(reward, float) and isinstance(terminated, bool) and isinstance(truncated, bool)
            and isinstance(info, dict)):
        return (f"step() returned ({type(reward).__name__}, {type(terminated).__name__}, "
                f"{type(truncated).__name__}, {type(info).__name__})"), ended
    if not env.observation_space.contains(obs):
        return f"the observation is outside the observation space: {_show(obs)}", ended
    try:
        obs["text"].encode("utf-8")
        str(info.get("error", "")).encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"the observation or info['error'] is not UTF-8 text: {exc}", ended
    if "crash" in info:
        crash = info["crash"]
        return (f"the env crashed in {crash['where']}: {crash['type']}: {crash['message']}"[:1000]
                + "\n" + crash["traceback"][-1500:]), ended
    report.errors += "error" in info
    parsed = parse_action(action, tools)
    if isinstance(parsed, ActionError):
        report.refused += 1
        if info.get("error") != parsed.message or not obs["text"].startswith(
                f"error: {parsed.message}"):
            return (f"a refused action gave {_show(obs['text'])}, not the parse error "
                    f"{parsed.message!r}"), ended
    return None, ended
