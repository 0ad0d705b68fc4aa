"""The chat history (``info["messages"]``) is valid input for real chat templates: the
trl 1.16 wheel's templates, rendered by transformers 5.25's own renderer, show every call,
each tool result and its image, and the assistant turn they render parses back to the
call that was made.

Marked ``trainers``: ``scripts/test_integrations.sh`` runs it in its venv.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from taskgym.integrations import ChatHistory, env_tools, parse_tool_calls, template_messages
from taskgym.integrations.chat_history import openai_tool_call

pytestmark = pytest.mark.trainers

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
TOOLS = [tool.openai() for tool in env_tools("mesh-trimesh-v0")]


def render(name: str, messages: list[dict[str, Any]]) -> str:
    try:
        from transformers.utils import chat_template_utils
    except ImportError as exc:
        pytest.fail(f"needs transformers==5.25.0 ({exc}): run scripts/test_integrations.sh")
    spec = importlib.util.find_spec("trl")
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("needs the trl==1.16.0 wheel's files: run scripts/test_integrations.sh")
    folder = Path(next(iter(spec.submodule_search_locations))) / "chat_templates"
    (text,), _ = chat_template_utils.render_jinja_template(
        conversations=[messages], tools=TOOLS,
        chat_template=(folder / f"{name}.jinja").read_text(encoding="utf-8"))
    return str(text)


def history(images: bool, several_calls: bool = True) -> ChatHistory:
    chat = ChatHistory("Fix the mesh.", "You are an engineer.", images=images)
    chat.assistant("Let me look.", [openai_tool_call("call_1_0", "render",
                                                     {"path": "part.stl", "view": "top"})])
    chat.tool("call_1_0", "top view of part.stl", [PNG])
    if several_calls:
        chat.assistant(None, [openai_tool_call("call_2_0", "run_python", {"code": "print(1)"}),
                              openai_tool_call("call_2_1", "submit", {})])
        chat.tool("call_2_0", "output:\n1")
    else:  # Llama 3.1's template takes one call per message
        chat.assistant(None, [openai_tool_call("call_2_0", "run_python", {"code": "print(1)"})])
        chat.tool("call_2_0", "output:\n1")
        chat.assistant(None, [openai_tool_call("call_2_1", "submit", {})])
    chat.tool("call_2_1", "graded: 1.0")
    return chat


@pytest.mark.parametrize("name", ["qwen2_5", "qwen3", "qwen3_6", "llama3_1"])
def test_text_history_renders_and_its_calls_parse_back(name: str) -> None:
    messages = template_messages(history(False, several_calls=name != "llama3_1").messages)
    text = render(name, messages)
    for needle in ("Fix the mesh.", "top view of part.stl", "output:\n1", "graded: 1.0"):
        assert needle in text or json.dumps(needle) in text, (name, needle)  # Llama: JSON
    end = "<|eot_id|>" if name.startswith("llama") else "<|im_end|>"
    turn = text.split("Fix the mesh." + end, 1)[1].split(end, 1)[0]  # the assistant's, with
    first_turn = turn.split("<|end_header_id|>\n\n", 1)[-1]  # Llama's header cut off
    parsed = parse_tool_calls(first_turn)
    assert [(c["tool"], c["args"]) for c in parsed.calls] == [
        ("render", {"path": "part.stl", "view": "top"})], name


def test_image_blocks_render_as_images_in_a_vision_template() -> None:
    text = render("qwen3_vl", template_messages(history(images=True).messages))
    assert "top view of part.stl" in text
    assert "<|vision_start|><|image_pad|><|vision_end|>" in text
