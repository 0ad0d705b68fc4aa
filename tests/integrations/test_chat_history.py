"""``info["messages"]`` through the :class:`ChatMessages` wrapper: OpenAI-format chat with
tool-call ids, tool results as text or as content blocks with the images a render tool
returned, calls after the end, and the copy for chat templates."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.integrations import AFTER_END, ChatMessages, parse_tool_calls, template_messages

pytestmark = [pytest.mark.sandbox]

CALC = str(Path(__file__).parents[2] / "fixtures" / "coding" / "calc")


def test_reset_and_steps_build_the_chat() -> None:
    env = ChatMessages(taskgym.make("coding-terminal-v0", tasks=CALC), system_prompt="Be brief.")
    try:
        obs, info = env.reset(options={"task_id": "calc"})
        assert info["messages"] == [{"role": "system", "content": "Be brief."},
                                    {"role": "user", "content": obs["text"]}]
        parsed = parse_tool_calls('<tool_call>{"name": "bash", "arguments": {"command": "echo hi"}}'
                                  '</tool_call>', id_prefix="t0_")
        obs, *_, info = env.step(parsed.calls[0])
        env.step({"tool": "bash", "args": {"command": "exit 3"}})  # no id: numbered
        env.step({"id": "x", "type": "function",
                  "function": {"name": "submit", "arguments": "{}"}})
        *_, info = env.step({"tool": "bash", "args": {"command": "echo late"}})
        messages = info["messages"]
        assert [m["role"] for m in messages] == ["system", "user"] + ["assistant", "tool"] * 4
        assert messages[2]["tool_calls"] == [{"id": "t0_0", "type": "function", "function": {
            "name": "bash", "arguments": '{"command": "echo hi"}'}}]
        assert messages[3] == {"role": "tool", "tool_call_id": "t0_0", "content": obs["text"]}
        assert messages[4]["tool_calls"][0]["id"] == "call_1" and "exit code 3" in messages[5]["content"]
        assert messages[6]["tool_calls"][0]["function"] == {"name": "submit", "arguments": "{}"}
        assert messages[7]["tool_call_id"] == "x"
        assert messages[9] == {"role": "tool", "tool_call_id": "call_3", "content": AFTER_END}
        # a new episode starts a new chat; the old list is left as it was
        _, info = env.reset(options={"task_id": "calc"})
        assert len(info["messages"]) == 2 and len(messages) == 10
    finally:
        env.close()


def test_a_render_tool_result_is_content_blocks_with_the_image() -> None:
    env = ChatMessages(taskgym.make("mesh-trimesh-v0"), images=True)
    try:
        env.reset(options={"task_id": "drill-7-8ths-cube"})
        *_, info = env.step({"tool": "render", "args": {"path": "7_8ths_cube.stl", "view": "top"}})
        png = info["images"][0]
        content = info["messages"][-1]["content"]
        assert content[0]["type"] == "text" and "top view" in content[0]["text"]
        url = content[1]["image_url"]["url"]
        assert content[1]["type"] == "image_url" and url.startswith("data:image/png;base64,")
        assert base64.b64decode(url.split(",", 1)[1]) == png
    finally:
        env.close()


def test_template_messages_give_arguments_as_objects() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "bash",
                                                         "arguments": json.dumps({"command": "ls"})}},
            {"id": "b", "type": "function", "function": {"name": "bash", "arguments": "{broken"}}]}]
    out = template_messages(messages)
    assert out[1]["tool_calls"][0]["function"]["arguments"] == {"command": "ls"}
    assert out[1]["tool_calls"][1]["function"]["arguments"] == "{broken"
    assert isinstance(messages[1]["tool_calls"][0]["function"]["arguments"], str)  # not changed


def test_the_asyncio_api_records_alike() -> None:
    import asyncio

    env = ChatMessages(taskgym.make("coding-terminal-v0", tasks=CALC))

    async def play() -> dict[str, Any]:
        await env.areset(options={"task_id": "calc"})
        *_, info = await env.astep({"id": "a", "tool": "bash", "args": {"command": "echo hi"}})
        return info

    try:
        messages = asyncio.run(play())["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
        assert messages[2] == {"role": "tool", "tool_call_id": "a", "content": "hi\n[exit code 0]"}
    finally:
        env.close()


def test_odd_actions_are_recorded_without_raising() -> None:
    class Odd:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    env = ChatMessages(taskgym.make("coding-terminal-v0", tasks=CALC))
    try:
        env.reset(options={"task_id": "calc"})
        *_, info = env.step({"tool": "bash", "args": {"command": Odd()}})
        *_, info = env.step(Odd())
        calls = [m["tool_calls"][0]["function"] for m in info["messages"] if m["role"] == "assistant"]
        assert calls[0]["name"] == "bash" and "repr raised" in calls[0]["arguments"]
        assert calls[1]["name"] == "" and "Odd" in calls[1]["arguments"]
        assert all(m["content"].startswith("error:") for m in info["messages"][2:] if m["role"] == "tool")
    finally:
        env.close()
