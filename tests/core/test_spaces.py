"""UnicodeText and ToolCallSpace."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pytest
from pydantic import BaseModel, ConfigDict, Field

from taskgym.core.spaces import ToolCallSpace, UnicodeText
from taskgym.core.tool import ActionError, Tool, ToolCall, ToolResult, parse_action, submit_tool
from taskgym.tools.shell import shell_tools


def _tools() -> list[Tool]:
    return [*shell_tools(lambda: None, lambda: 1.0), submit_tool()]  # type: ignore[arg-type]


def _tool(name: str, model: type[BaseModel]) -> Tool:
    return Tool(name, f"{name} tool", model, lambda a: ToolResult("ok"))


# -- UnicodeText -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "plain ascii", "emoji 😀🚀👩‍👩‍👧", "漢字とかな 한국어",
                                  "ctrl \x00\x01\x1b[31m\x7f\r\n\t", "\ud800 lone surrogate",
                                  "x" * 100_000])
def test_unicode_text_contains_any_string(text):
    assert UnicodeText().contains(text)
    assert text in UnicodeText()


@pytest.mark.parametrize("value", [None, b"bytes", 42, 3.5, ["a"], {"text": "a"},
                                   np.str_("x").encode()])
def test_unicode_text_rejects_non_strings(value):
    assert not UnicodeText().contains(value)


def test_unicode_text_max_length():
    space = UnicodeText(max_length=5)
    assert space.contains("12345")
    assert space.contains("😀😀😀😀😀")
    assert not space.contains("123456")


def test_unicode_text_sample_seeded_and_contained():
    a, b = UnicodeText(seed=7), UnicodeText(seed=7)
    samples_a = [a.sample() for _ in range(20)]
    assert samples_a == [b.sample() for _ in range(20)]
    assert all(isinstance(s, str) and a.contains(s) and len(s) < 64 for s in samples_a)
    assert len(set(samples_a)) > 1


def test_unicode_text_equality_and_jsonable():
    assert UnicodeText(10) == UnicodeText(10)
    assert UnicodeText(10) != UnicodeText(11)
    assert repr(UnicodeText(3)) == "UnicodeText(max_length=3)"
    assert UnicodeText().to_jsonable(("a", "é")) == ["a", "é"]
    assert UnicodeText().from_jsonable(["a", "é"]) == ["a", "é"]
    assert UnicodeText().is_np_flattenable is False


# -- ToolCallSpace ---------------------------------------------------------------------------


def test_samples_parse_for_many_seeds():
    tools = _tools()
    by_name = {t.name: t for t in tools}
    space = ToolCallSpace(tools)
    seen = set()
    for seed in range(400):
        space.seed(seed)
        action = space.sample()
        assert set(action) == {"tool", "args"}
        call = parse_action(action, by_name)
        assert isinstance(call, ToolCall), (seed, action, call)
        seen.add(action["tool"])
        if action["tool"] == "bash" and "timeout" in action["args"]:
            assert 0 < action["args"]["timeout"] <= 3600
    assert seen == {"bash", "read_file", "write_file", "submit"}


class _Varied(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["fast", "slow", "auto"]
    flag: bool = False
    count: int = Field(default=3, ge=2, le=4)
    ratio: float = Field(ge=0.5, le=0.75)
    maybe: int | None = Field(default=None, ge=10, le=11)
    label: str


def test_samples_respect_literals_inclusive_bounds_and_optionals():
    space = ToolCallSpace([_tool("varied", _Varied)], seed=0)
    modes = set()
    for _ in range(300):
        action = space.sample()
        assert space.contains(action), action
        args = action["args"]
        modes.add(args["mode"])
        assert 0.5 < args["ratio"] <= 0.75
        if "count" in args:
            assert args["count"] in (2, 3, 4)
        if "maybe" in args:
            assert args["maybe"] in (10, 11)
        assert isinstance(args["label"], str) and args["label"]
    assert modes == {"fast", "slow", "auto"}


class _Exclusive(BaseModel):
    n: int = Field(gt=0, lt=5)


def test_samples_respect_exclusive_bounds():
    space = ToolCallSpace([_tool("ex", _Exclusive)], seed=0)
    assert all(space.contains(space.sample()) for _ in range(100))


class _Short(BaseModel):
    code: str = Field(max_length=4)


def test_samples_respect_string_length():
    space = ToolCallSpace([_tool("short", _Short)], seed=0)
    assert all(space.contains(space.sample()) for _ in range(100))


def test_sample_is_deterministic_under_seeding():
    space_a, space_b = ToolCallSpace(_tools(), seed=123), ToolCallSpace(_tools(), seed=123)
    run_a = [space_a.sample() for _ in range(30)]
    assert run_a == [space_b.sample() for _ in range(30)]
    space_a.seed(123)
    assert [space_a.sample() for _ in range(30)] == run_a
    space_a.seed(124)
    assert [space_a.sample() for _ in range(30)] != run_a


@pytest.mark.parametrize("action", [
    {"tool": "bash", "args": {"command": "ls"}},
    '{"tool": "submit", "args": {}}',
    {"id": "c", "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
    {"tool": "bash", "args": {}},
    {"tool": "bsh", "args": {"command": "ls"}},
    "not json",
    None,
    42,
    b"\xff",
    {"tool": "write_file", "args": {"path": "a", "content": "b", "mode": 7}},
    "[" * 50_000,
])
def test_contains_agrees_with_parse_action(action):
    tools = _tools()
    space = ToolCallSpace(tools)
    parsed = parse_action(action, {t.name: t for t in tools})
    assert space.contains(action) is (not isinstance(parsed, ActionError))


def test_contains_never_raises_on_random_junk():
    space = ToolCallSpace(_tools(), seed=1)
    rng = np.random.default_rng(0)
    for _ in range(200):
        junk = bytes(rng.integers(0, 256, size=int(rng.integers(0, 40)), dtype=np.uint8))
        assert space.contains(junk) is False
        assert space.contains(junk.decode("latin-1")) is False


def test_space_repr_and_equality():
    assert repr(ToolCallSpace(_tools())) == "ToolCallSpace(bash, read_file, write_file, submit)"
    assert ToolCallSpace(_tools()) == ToolCallSpace(_tools())
    assert ToolCallSpace(_tools()) != ToolCallSpace(_tools()[:1])
    assert ToolCallSpace(_tools()).is_np_flattenable is False
