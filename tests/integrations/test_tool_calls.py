"""parse_tool_calls: each format's calls, malformed calls as errors, typed XML values, and
any text at all without an exception (the real chat templates' renderings are read back in
test_trainer_packages.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import taskgym
from taskgym.errors import ConfigError
from taskgym.integrations import STYLES, ToolCallParse, parse_tool_calls
from taskgym.integrations.tool_calls import coerce_value

GAME_TOOLS = taskgym.integrations.env_tools("game-godot-v0")


def actions(parsed: ToolCallParse) -> list[tuple[str, dict[str, Any]]]:
    return [(c["tool"], c["args"]) for c in parsed.calls]


def test_hermes() -> None:
    text = ('Let me look.\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls </tool_call>"}}\n'
            '</tool_call>\n<tool_call>\n{"name": "submit", "arguments": "{}"}\n</tool_call><|im_end|>')
    parsed = parse_tool_calls(text)
    assert parsed.style == "hermes"
    assert actions(parsed) == [("bash", {"command": "ls </tool_call>"}), ("submit", {})]
    assert [c["id"] for c in parsed.calls] == ["call_0", "call_1"]
    assert parsed.text == "Let me look.\n\n<|im_end|>"
    assert parsed.errors == ()


def test_the_actions_are_what_env_step_accepts() -> None:
    parsed = parse_tool_calls('<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>')
    call = taskgym.parse_action(parsed.calls[0], {t.name: t for t in GAME_TOOLS})
    assert not isinstance(call, taskgym.core.tool.ActionError)
    assert call.call_id == "call_0" and call.tool.name == "bash"


def test_xml_values_typed_by_the_schema() -> None:
    text = ("<think>\nplan: <tool_call>not a call</tool_call>\n</think>\n\n<tool_call>\n"
            "<function=run_scene>\n<parameter=frames>\n7\n</parameter>\n"
            "<parameter=inputs>\n[[1, \"jump\", true]]\n</parameter>\n"
            "<parameter=path>\n\nres://main.tscn \n\n</parameter>\n</function>\n</tool_call>")
    parsed = parse_tool_calls(text, tools=GAME_TOOLS)
    assert parsed.style == "xml"
    assert actions(parsed) == [("run_scene", {"frames": 7, "inputs": [[1, "jump", True]],
                                              "path": "\nres://main.tscn \n"})]
    assert parsed.text.startswith("<think>\nplan: <tool_call>not a call</tool_call>")
    # without tools the values stay the model's text
    assert actions(parse_tool_calls(text))[0][1]["frames"] == "7"


def test_reasoning_the_template_opened_in_the_prompt() -> None:
    # Qwen3.5-think and Nemotron put <think> in the prompt: the reply only closes it
    drafted = parse_tool_calls('maybe <tool_call>{"name": "a", "arguments": {}}</tool_call>?\n</think>\n'
                               '<tool_call>{"name": "b", "arguments": {}}</tool_call>')
    assert actions(drafted) == [("b", {})] and drafted.text.startswith("maybe <tool_call>")
    # a </think> inside a call's text, with no reasoning before it, is the call's text
    inside = parse_tool_calls('<tool_call>{"name": "w", "arguments": {"c": "</think>"}}</tool_call>')
    assert actions(inside) == [("w", {"c": "</think>"})]


def test_xml_without_closing_function_tag_and_with_openai_specs() -> None:
    tools = [t.openai() for t in GAME_TOOLS]
    parsed = parse_tool_calls("<tool_call><function=write_file><parameter=executable>True"
                              "</parameter></tool_call>", "xml", tools)
    assert actions(parsed) == [("write_file", {"executable": True})]


def test_glm() -> None:
    text = ("<think></think>\n<tool_call>run_scene\n<arg_key>frames</arg_key>\n<arg_value>60"
            "</arg_value>\n<arg_key>nodes</arg_key>\n<arg_value>[\"a\", \"b\"]</arg_value>\n"
            "</tool_call>\n<tool_call>submit\n</tool_call>")
    parsed = parse_tool_calls(text, tools=GAME_TOOLS)
    assert parsed.style == "glm"
    assert actions(parsed) == [("run_scene", {"frames": 60, "nodes": ["a", "b"]}), ("submit", {})]


@pytest.mark.parametrize("text", [
    '{"name": "bash", "parameters": {"command": "ls"}}<|eot_id|>',
    '<|python_tag|>{"name": "bash", "parameters": {"command": "ls"}}',
    ' {"name": "bash", "arguments": {"command": "ls"}}',
])
def test_llama(text: str) -> None:
    parsed = parse_tool_calls(text)
    assert parsed.style == "llama"
    assert actions(parsed) == [("bash", {"command": "ls"})]


def test_llama_several_calls_and_plain_json_answers() -> None:
    parsed = parse_tool_calls('{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"x": 1}}')
    assert actions(parsed) == [("a", {}), ("b", {"x": 1})]
    plain = parse_tool_calls('{"answer": 42}')
    assert plain.calls == () and plain.errors == () and plain.style == "none"
    assert parse_tool_calls('The answer is {"name": "x", "parameters": {}}').calls == ()


@pytest.mark.parametrize("text", [
    '<|channel|>analysis<|message|>Need to list.<|end|><|start|>assistant to=functions.bash'
    '<|channel|>commentary json<|message|>{"command": "ls"}<|call|>',
    '<|start|>assistant<|channel|>commentary to=functions.bash <|constrain|>json<|message|>'
    '{"command": "ls"}<|call|>',
    ' to=functions.bash<|channel|>commentary json<|message|>{"command": "ls"}',
])
def test_harmony(text: str) -> None:
    parsed = parse_tool_calls(text)
    assert parsed.style == "harmony"
    assert actions(parsed) == [("bash", {"command": "ls"})]
    assert parsed.errors == ()


def test_harmony_final_answer_and_other_recipients() -> None:
    final = parse_tool_calls("<|channel|>final<|message|>Done.<|return|>")
    assert final.calls == () and final.errors == () and "Done." in final.text
    other = parse_tool_calls('<|start|>assistant to=browser.search<|channel|>commentary<|message|>'
                             '{"q": 1}<|call|>')
    assert other.calls == () and "browser.search" in other.errors[0].message
    reply = parse_tool_calls('<|start|>functions.bash to=assistant<|channel|>commentary<|message|>'
                             '"ok"<|end|>')
    assert reply.calls == () and reply.errors == ()


@pytest.mark.parametrize(("text", "style", "message"), [
    ('<tool_call>{"name": "bash", "arguments": {"command": </tool_call>', "auto", "not valid JSON"),
    ('<tool_call>{"arguments": {}}</tool_call>', "auto", 'no "name"'),
    ('<tool_call>{"name": "bash", "arguments": [1]}</tool_call>', "auto", "must be a JSON object"),
    ('<tool_call>{"name": "bash", "arguments": "{x"}</tool_call>', "auto", "not valid JSON"),
    ('<tool_call>{"name": "bash"} trailing</tool_call>', "auto", "unexpected text"),
    ("<tool_call><function=bash><parameter=command>ls</tool_call>", "auto", "not closed"),
    ("<tool_call><function=bash><parameter=a>1</parameter><parameter=a>2</parameter>"
     "</function></tool_call>", "auto", "given twice"),
    ("<tool_call><function=>", "xml", "names no function"),
    ("<tool_call><function=bash>junk</function></tool_call>", "auto", "unexpected text"),
    ("<tool_call>bash\n<arg_key>a</arg_key><arg_value>1</tool_call>", "auto", "not closed"),
    ("<tool_call>bash\n<arg_key>a</arg_key>oops</tool_call>", "auto", "has no <arg_value>"),
    ("<tool_call>\n</tool_call>", "glm", "names no function"),
    ('{"name": "bash", "parameters": {"command": ', "llama", "not valid JSON"),
    ("<|python_tag|>brave_search.call(query='x')", "auto", "not valid JSON"),
    ("to=functions.bash<|channel|>commentary json<|message|>{bad}<|call|>", "auto", "not valid JSON"),
    ("to=functions.bash<|channel|>commentary json<|message|>[1]<|call|>", "auto", "JSON object"),
    ('to=functions.bash<|channel|>commentary json<|message|>{} {}<|call|>', "auto", "unexpected text"),
    ('<tool_call>\n{"name": "bash", "arguments": {}}', "hermes", None),  # cut after the call: read
    ('<tool_call><function=bash></function></tool_call>', "hermes", "not valid JSON"),
])
def test_malformed_calls_are_errors(text: str, style: Any, message: str | None) -> None:
    parsed = parse_tool_calls(text, style)
    if message is None:
        assert parsed.errors == () and len(parsed.calls) == 1
        return
    assert parsed.calls == ()
    (error,) = parsed.errors
    assert message in error.message
    assert error.id == "call_0" and error.raw and error.raw in text


def test_errors_and_calls_share_the_numbering() -> None:
    text = ('<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{bad}</tool_call>'
            '<tool_call>{"name": "b", "arguments": {}}</tool_call>')
    parsed = parse_tool_calls(text, id_prefix="turn3_")
    assert [c["id"] for c in parsed.calls] == ["turn3_0", "turn3_2"]
    assert [e.id for e in parsed.errors] == ["turn3_1"]


def test_no_calls_and_a_bad_style() -> None:
    parsed = parse_tool_calls("  Just an answer.  ")
    assert parsed == ToolCallParse((), (), "Just an answer.", "none")
    with pytest.raises(ConfigError, match="unknown tool-call style"):
        parse_tool_calls("x", "mistral")  # type: ignore[arg-type]
    assert parse_tool_calls(b"bytes").errors[0].message == "the reply is not text"  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="a tool must be"):
        parse_tool_calls("x", tools=["bash"])  # type: ignore[list-item]


@pytest.mark.parametrize(("raw", "schema", "value"), [
    ("7", {"type": "integer"}, 7),
    (" 7 ", {"type": "integer"}, 7),
    ("7.5", {"type": "integer"}, "7.5"),
    ("7.5", {"type": "number"}, 7.5),
    ("7", {"type": "number"}, 7),
    ("1e3", {"type": "number"}, 1000.0),
    ("nan", {"type": "number"}, "nan"),
    ("True", {"type": "boolean"}, True),
    ("false", {"type": "boolean"}, False),
    ("yes", {"type": "boolean"}, "yes"),
    ("None", {"anyOf": [{"type": "string"}, {"type": "null"}]}, None),
    ("null", {"type": "integer", "nullable": True}, None),
    ("None", {"type": "string"}, "None"),
    ("[1, 2]", {"type": "array"}, [1, 2]),
    ('{"a": 1}', {"type": "object"}, {"a": 1}),
    ('{"a": 1}', {"type": "array"}, '{"a": 1}'),
    ("[1, 2", {"type": "array"}, "[1, 2"),
    ("7", {"type": "string"}, "7"),
    ("top", {"enum": ["iso", "top"]}, "top"),
    ('"top"', {"enum": ["iso", "top"]}, "top"),
    ("2", {"enum": [1, 2]}, 2),
    ("5", {"anyOf": [{"type": "integer"}, {"type": "string"}]}, 5),
    ("x", {"$ref": "#/$defs/N"}, "x"),
    ("3", {"$ref": "#/$defs/N"}, 3),
    ("3", {"allOf": [{"$ref": "#/$defs/N"}]}, 3),
    ("3", {}, "3"),
    ("[" * 100_000 + "]" * 100_000, {"type": "array"}, "[" * 100_000 + "]" * 100_000),
])
def test_coerce_value(raw: str, schema: dict[str, Any], value: Any) -> None:
    got = coerce_value(raw, schema, {"N": {"type": "integer"}})
    assert got == value and type(got) is type(value)


# -- any text --------------------------------------------------------------------------
FRAGMENTS = ["<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=",
             "</parameter>", ">", "\n", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
             "{", "}", '"name"', ":", '"arguments"', '"parameters"', "[", "]", ",", '"', "bash",
             "<|python_tag|>", "<|start|>", "<|channel|>", "<|message|>", "<|call|>", "<|end|>",
             "to=functions.", "to=", "<think>", "</think>", "<|constrain|>json", " ", "\\", "\ud800"]


@settings(max_examples=300, deadline=None)
@given(text=st.text(), style=st.sampled_from(STYLES))
def test_arbitrary_text_never_raises(text: str, style: Any) -> None:
    parsed = parse_tool_calls(text, style, GAME_TOOLS)
    assert isinstance(parsed, ToolCallParse)


@settings(max_examples=500, deadline=None)
@given(parts=st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=5), max_size=40),
       style=st.sampled_from(STYLES))
def test_text_made_of_call_fragments_never_raises(parts: list[str], style: Any) -> None:
    text = "".join(parts)
    parsed = parse_tool_calls(text, style, GAME_TOOLS)
    ids = [c["id"] for c in parsed.calls] + [e.id for e in parsed.errors]
    assert len(set(ids)) == len(ids)
    for call in parsed.calls:
        assert isinstance(call["tool"], str) and call["tool"] and isinstance(call["args"], dict)


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner,
                                                                                max_size=3),
                    max_leaves=10)


@settings(max_examples=200, deadline=None)
@given(name=st.from_regex(r"[a-z_][a-z0-9_]{0,10}", fullmatch=True),
       args=st.dictionaries(st.text(), JSON, max_size=4), prose=st.text(max_size=20))
def test_hermes_carries_any_json_arguments(name: str, args: dict[str, Any], prose: str) -> None:
    call = json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
    parsed = parse_tool_calls(f"{prose}<tool_call>\n{call}\n</tool_call>", "hermes")
    assert actions(parsed) == [(name, args)]


def test_parse_tool_calls_is_taskgym_api() -> None:
    assert "parse_tool_calls" in taskgym.__all__
    assert taskgym.parse_tool_calls is parse_tool_calls
    assert all(hasattr(taskgym, name) for name in taskgym.__all__)
    assert all(hasattr(taskgym.integrations, name) for name in taskgym.integrations.__all__)
