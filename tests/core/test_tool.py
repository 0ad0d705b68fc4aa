"""parse_action on every accepted shape and every malformed one; Tool schemas."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from taskgym.core.tool import (
    MAX_ACTION_CHARS,
    ActionError,
    SubmitArgs,
    Tool,
    ToolCall,
    ToolResult,
    parse_action,
    submit_tool,
)
from taskgym.tools.shell import BashArgs, WriteFileArgs, shell_tools

AVAILABLE = "Available: bash, read_file, write_file, submit"


def _no_session() -> Any:
    raise AssertionError("parsing must not touch the session")


@pytest.fixture(scope="module")
def tools() -> dict[str, Tool]:
    tool_list = [*shell_tools(_no_session, lambda: 1.0), submit_tool()]
    return {t.name: t for t in tool_list}


def _ok(action: Any, tools: dict[str, Tool]) -> ToolCall:
    result = parse_action(action, tools)
    assert isinstance(result, ToolCall), result
    return result


def _err(action: Any, tools: dict[str, Tool]) -> str:
    result = parse_action(action, tools)
    assert isinstance(result, ActionError), result
    return result.message


# -- accepted shapes ---------------------------------------------------------------------


def test_dict_with_tool_and_args(tools):
    call = _ok({"tool": "bash", "args": {"command": "ls -la", "timeout": 5}}, tools)
    assert call.tool is tools["bash"]
    assert isinstance(call.args, BashArgs)
    assert call.args.command == "ls -la"
    assert call.args.timeout == 5.0
    assert call.call_id is None


def test_dict_with_name_and_arguments(tools):
    call = _ok({"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}, tools)
    assert call.tool.name == "write_file"
    assert isinstance(call.args, WriteFileArgs)
    assert (call.args.path, call.args.content, call.args.executable) == ("a.txt", "x", False)


def test_json_string(tools):
    call = _ok(json.dumps({"tool": "bash", "args": {"command": "echo 'hi'"}}), tools)
    assert call.tool.name == "bash"
    assert call.args.command == "echo 'hi'"


def test_json_bytes_utf8(tools):
    text = json.dumps({"tool": "bash", "args": {"command": "echo é漢😀"}}, ensure_ascii=False)
    call = _ok(text.encode("utf-8"), tools)
    assert call.args.command == "echo é漢😀"


def test_openai_tool_call_dict(tools):
    action = {"id": "call_abc", "type": "function",
              "function": {"name": "bash", "arguments": '{"command": "pwd"}'}}
    call = _ok(action, tools)
    assert call.tool.name == "bash"
    assert call.args.command == "pwd"
    assert call.call_id == "call_abc"


def test_openai_tool_call_dict_with_empty_arguments(tools):
    action = {"id": "call_1", "type": "function", "function": {"name": "submit", "arguments": ""}}
    call = _ok(action, tools)
    assert call.tool.name == "submit"
    assert isinstance(call.args, SubmitArgs)
    assert call.call_id == "call_1"


def test_openai_sdk_object(tools):
    action = SimpleNamespace(
        id="call_xyz", type="function",
        function=SimpleNamespace(name="read_file", arguments='{"path": "/app/x.py"}'))
    call = _ok(action, tools)
    assert call.tool.name == "read_file"
    assert call.args.path == "/app/x.py"
    assert call.call_id == "call_xyz"


def test_args_given_as_json_string_or_none(tools):
    assert _ok({"tool": "bash", "args": '{"command": "ls"}'}, tools).args.command == "ls"
    assert isinstance(_ok({"tool": "submit", "args": None}, tools).args, SubmitArgs)
    assert isinstance(_ok({"tool": "submit"}, tools).args, SubmitArgs)


def test_non_string_call_id_is_dropped(tools):
    assert _ok({"tool": "submit", "args": {}, "id": 7}, tools).call_id is None
    assert _ok({"tool": "submit", "args": {}, "id": "c9"}, tools).call_id == "c9"


def test_control_characters_inside_valid_arguments_are_kept(tools):
    command = "printf 'a\\tb'\x01\x1b[0m\x7f"
    assert _ok({"tool": "bash", "args": {"command": command}}, tools).args.command == command
    escaped = json.dumps({"tool": "bash", "args": {"command": command}})
    assert _ok(escaped, tools).args.command == command


def test_action_just_under_the_limit_is_accepted(tools):
    overhead = len(json.dumps({"tool": "bash", "args": {"command": ""}}))
    text = json.dumps({"tool": "bash", "args": {"command": "a" * (MAX_ACTION_CHARS - overhead)}})
    assert len(text) == MAX_ACTION_CHARS
    assert len(_ok(text, tools).args.command) == MAX_ACTION_CHARS - overhead


# -- malformed actions ---------------------------------------------------------------------


def test_bad_json(tools):
    message = _err('{"tool": "bash", "args": {"command": "ls"', tools)
    assert message == "the action is not valid JSON: Expecting ',' delimiter at line 1 column 42"


def test_trailing_garbage_and_empty_string(tools):
    assert _err('{"tool": "submit"} x', tools) == (
        "the action is not valid JSON: Extra data at line 1 column 20")
    assert _err("", tools) == "the action is not valid JSON: Expecting value at line 1 column 1"


def test_bad_json_in_openai_arguments(tools):
    action = {"id": "c", "function": {"name": "bash", "arguments": "{command: ls}"}}
    assert _err(action, tools) == (
        "the arguments of bash is not valid JSON: Expecting property name enclosed in double "
        "quotes at line 1 column 2")


@pytest.mark.parametrize(("text", "kind"), [("[1, 2]", "list"), ('"bash"', "str"),
                                            ("42", "int"), ("null", "NoneType"),
                                            ("3.5", "float")])
def test_json_that_is_not_an_object(tools, text, kind):
    assert _err(text, tools) == f"an action must be an object with 'tool' and 'args', not {kind}"


@pytest.mark.parametrize(("action", "kind"), [(None, "NoneType"), (42, "int"), (0, "int"),
                                              (3.5, "float"), ([{"tool": "submit"}], "list"),
                                              ((), "tuple"), (object(), "object")])
def test_python_values_that_are_not_an_object(tools, action, kind):
    assert _err(action, tools) == f"an action must be an object with 'tool' and 'args', not {kind}"


def test_undecodable_bytes(tools):
    assert _err(b"\xff\xfe\x00", tools) == (
        "the action is not UTF-8: byte 0xff at position 0 cannot be decoded; send UTF-8 text")
    arguments = b'{"command": "echo \xc3"}'
    assert _err({"function": {"name": "bash", "arguments": arguments}}, tools) == (
        "the arguments of bash is not UTF-8: byte 0xc3 at position 18 cannot be decoded; "
        "send UTF-8 text")


# -- strings that are not Unicode text: lone surrogates, in every place an action holds one --

LONE = "\ud800"
SURROGATE_ACTIONS = {
    "dict value": {"tool": "bash", "args": {"command": f"echo {LONE}"}},
    "low surrogate": {"tool": "bash", "args": {"command": "echo \udc80"}},
    "path": {"tool": "read_file", "args": {"path": f"a{LONE}.txt"}},
    "content": {"tool": "write_file", "args": {"path": "a.txt", "content": f"x{LONE}"}},
    "argument name": {"tool": "write_file", "args": {"path": "a", "content": "", f"k{LONE}": 1}},
    "nested list": {"tool": "bash", "args": {"command": "ls", "x": [[{"y": ["ok", LONE]}]]}},
    "nested key": {"tool": "bash", "args": {"command": "ls", "x": {f"{LONE}": 1}}},
    "json escape": '{"tool": "bash", "args": {"command": "echo \\ud800"}}',
    "json raw": '{"tool": "bash", "args": {"command": "echo \ud800"}}',
    "openai arguments": {"id": "c", "type": "function",
                         "function": {"name": "bash", "arguments": '{"command": "\\udfff"}'}},
    "sdk object": SimpleNamespace(id="c", function=SimpleNamespace(
        name="write_file", arguments={"path": "p", "content": LONE})),
    "call id": {"id": f"call{LONE}", "function": {"name": "bash", "arguments": '{"command": "ls"}'}},
}


@pytest.mark.parametrize("where", list(SURROGATE_ACTIONS))
def test_lone_surrogates_anywhere_are_refused(tools, where):
    message = _err(SURROGATE_ACTIONS[where], tools)
    assert "a lone surrogate, which is not Unicode text and cannot be encoded as UTF-8" in message
    message.encode("utf-8")  # the message itself is text an agent can be shown


def test_surrogate_message_says_where(tools):
    assert _err({"tool": "bash", "args": {"command": f"echo {LONE}"}}, tools) == (
        "the argument 'command' of bash holds '\\ud800' at character 5, a lone surrogate, "
        "which is not Unicode text and cannot be encoded as UTF-8; send UTF-8 text")


def test_paired_surrogate_escapes_are_one_character(tools):
    call = _ok('{"tool": "bash", "args": {"command": "echo \\ud83d\\ude00"}}', tools)
    assert call.args.command == "echo 😀"


def test_unknown_tool_named_with_a_surrogate(tools):
    message = _err({"tool": f"bash{LONE}", "args": {}}, tools)
    assert message.startswith("unknown tool 'bash\\ud800'.")
    message.encode("utf-8")


def test_unknown_tool_suggests_the_nearest(tools):
    assert _err({"tool": "bsh", "args": {"command": "ls"}}, tools) == (
        f"unknown tool 'bsh'. Did you mean 'bash'? {AVAILABLE}")
    assert _err({"tool": "readfile", "args": {}}, tools) == (
        f"unknown tool 'readfile'. Did you mean 'read_file'? {AVAILABLE}")


def test_unknown_tool_without_near_match(tools):
    assert _err({"tool": "qqqqqq", "args": {}}, tools) == f"unknown tool 'qqqqqq'. {AVAILABLE}"


def test_unknown_tool_name_is_escaped_and_cut(tools):
    message = _err({"tool": "bash\x00\x07", "args": {}}, tools)
    assert message.startswith(r"unknown tool 'bash\x00\x07'. Did you mean 'bash'?")
    assert "\x00" not in message
    message = _err({"tool": "z" * 100_000, "args": {}}, tools)
    assert message == f"unknown tool {'z' * 100!r}. {AVAILABLE}"


def test_no_tool_named(tools):
    expected = "the action names no tool: give 'tool' (or an OpenAI function name)"
    assert _err({"args": {"command": "ls"}}, tools) == expected
    assert _err({"tool": "", "args": {}}, tools) == expected
    assert _err({"tool": ["bash"], "args": {}}, tools) == expected
    assert _err({"function": {"arguments": "{}"}}, tools) == expected


def test_unexpected_keys(tools):
    assert _err({"tool": "bash", "args": {"command": "ls"}, "cmd": "x"}, tools) == (
        "unexpected keys ['cmd'] in the action; use 'tool' and 'args'")


@pytest.mark.parametrize(("args", "problem"), [
    ({"command": 5}, "command: Input should be a valid string"),
    ({"command": ["ls"]}, "command: Input should be a valid string"),
    ({"command": None}, "command: Input should be a valid string"),
    ({"command": "ls", "timeout": "soon"},
     "timeout: Input should be a valid number, unable to parse string as a number"),
    ({"command": "ls", "timeout": -1}, "timeout: Input should be greater than 0"),
    ({"command": "ls", "timeout": 5000}, "timeout: Input should be less than or equal to 3600"),
])
def test_wrong_argument_types_and_values(tools, args, problem):
    assert _err({"tool": "bash", "args": args}, tools) == f"invalid arguments for bash: {problem}"


def test_extra_arguments(tools):
    assert _err({"tool": "bash", "args": {"command": "ls", "cwd": "/"}}, tools) == (
        "invalid arguments for bash: cwd: Extra inputs are not permitted")
    assert _err({"tool": "submit", "args": {"force": True}}, tools) == (
        "invalid arguments for submit: force: Extra inputs are not permitted")


def test_missing_required_arguments(tools):
    assert _err({"tool": "bash", "args": {}}, tools) == (
        "invalid arguments for bash: command: Field required")
    assert _err({"tool": "write_file", "args": {}}, tools) == (
        "invalid arguments for write_file: path: Field required; content: Field required")


def test_at_most_five_problems_are_listed():
    fields = {f"f{i}": (int, ...) for i in range(8)}
    from pydantic import create_model

    model = create_model("Many", **fields)  # type: ignore[call-overload]
    many = {"many": Tool("many", "d", model, lambda a: ToolResult("x"))}
    message = _err({"tool": "many", "args": {}}, many)
    assert message.count("Field required") == 5
    assert "f4: Field required" in message and "f5" not in message


@pytest.mark.parametrize("args", [[1, 2], 5, True])
def test_arguments_not_an_object(tools, args):
    kind = type(args).__name__
    assert _err({"tool": "bash", "args": args}, tools) == (
        f"the arguments of bash must be an object, not {kind}")


def test_megabytes_of_text(tools):
    text = "x" * (MAX_ACTION_CHARS + 1)
    assert _err(text, tools) == "the action is 1,000,001 characters; the limit is 1,000,000"
    big = json.dumps({"tool": "bash", "args": {"command": "a" * 3_000_000}})
    assert _err(big, tools) == f"the action is {len(big):,} characters; the limit is 1,000,000"
    assert _err(big.encode(), tools) == (
        f"the action is {len(big):,} characters; the limit is 1,000,000")


def test_megabytes_in_openai_arguments(tools):
    arguments = json.dumps({"command": "a" * (MAX_ACTION_CHARS + 10)})
    action = {"id": "c", "function": {"name": "bash", "arguments": arguments}}
    assert _err(action, tools) == (
        f"the arguments of bash is {len(arguments):,} characters; the limit is 1,000,000")


def test_megabytes_in_a_dict_action_are_refused(tools):
    message = _err({"tool": "bash", "args": {"command": "a" * 3_000_000}}, tools)
    assert message == ("the arguments of bash hold more than 1,000,000 characters and values; "
                       "the limit is 1,000,000 (send long content in several calls)")
    many = {"tool": "bash", "args": {"command": "ls", "x": [["a" * 10] * 1000] * 1000}}
    assert "the limit is 1,000,000" in _err(many, tools)


def test_self_containing_arguments_stop_at_the_limit(tools):
    loop: dict[str, Any] = {}
    loop["again"] = loop
    assert "the limit is 1,000,000" in _err({"tool": "bash", "args": {"command": "ls", "x": loop}},
                                            tools)


def test_deeply_nested_dict_arguments(tools):
    deep: Any = "x"
    for _ in range(200_000):
        deep = [deep]
    message = _err({"tool": "write_file", "args": {"path": "a", "content": deep}}, tools)
    assert message == "invalid arguments for write_file: content: Input should be a valid string"


def test_raw_control_characters_make_invalid_json(tools):
    message = _err('{"tool": "bash", "args": {"command": "a\x01b"}}', tools)
    assert message.startswith("the action is not valid JSON: Invalid control character")
    assert message.endswith("line 1 column 40")


def test_control_character_message_is_not_garbled(tools):
    message = _err('{"tool": "bash", "args": {"command": "a\x01b"}}', tools)
    assert " at at " not in message


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000,
                                  '{"a":' * 50_000 + "1" + "}" * 50_000])
def test_deeply_nested_json(tools, text):
    assert _err(text, tools) == "the action is nested too deeply"


def test_deeply_nested_json_arguments(tools):
    arguments = '{"command": ' + "[" * 100_000 + "]" * 100_000 + "}"
    action = {"function": {"name": "bash", "arguments": arguments}}
    assert _err(action, tools) == "the action is nested too deeply"


def test_objects_that_raise_are_reported_not_raised(tools):
    class Exploding:
        @property
        def function(self) -> Any:
            raise RuntimeError("boom")

    assert _err(Exploding(), tools) == "could not read the action: RuntimeError: boom"

    class BadDict(dict):
        def get(self, *args: Any) -> Any:
            raise ValueError("no get")

    assert _err(BadDict(tool="bash"), tools) == "could not read the action: ValueError: no get"


def test_sdk_object_with_no_arguments(tools):
    action = SimpleNamespace(id="c", function=SimpleNamespace(name="bash", arguments=None))
    assert _err(action, tools) == "invalid arguments for bash: command: Field required"


# -- Tool schemas ----------------------------------------------------------------------------


class _Nested(BaseModel):
    depth: int = Field(ge=0, description="How deep.")


class _SchemaArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(description="What to look for.")
    limit: int = Field(default=10, ge=1, le=100)
    inner: _Nested | None = None


def _walk_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value).union(*(_walk_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_walk_keys(v) for v in value))
    return set()


def test_json_schema_strips_titles_keeps_the_rest():
    tool = Tool("search", "Search things.", _SchemaArgs, lambda a: ToolResult("x"))
    schema = tool.json_schema()
    assert "title" not in _walk_keys(schema)
    assert schema["type"] == "object"
    assert schema["required"] == ["query"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["query"] == {"type": "string", "description": "What to look for."}
    assert schema["properties"]["limit"] == {
        "type": "integer", "default": 10, "minimum": 1, "maximum": 100}
    assert schema["$defs"]["_Nested"]["properties"]["depth"]["minimum"] == 0


def test_openai_format(tools):
    spec = tools["bash"].openai()
    assert set(spec) == {"type", "function"}
    assert spec["type"] == "function"
    assert set(spec["function"]) == {"name", "description", "parameters"}
    assert spec["function"]["name"] == "bash"
    assert spec["function"]["description"] == tools["bash"].description
    params = spec["function"]["parameters"]
    assert params["required"] == ["command"]
    assert set(params["properties"]) == {"command", "timeout"}
    assert params["additionalProperties"] is False
    json.dumps(spec)  # JSON-serialisable as sent to a server
    submit = tools["submit"].openai()["function"]["parameters"]
    assert submit == {"type": "object", "properties": {}, "additionalProperties": False}


def test_argument_named_title_survives_in_schema():
    class IssueArgs(BaseModel):
        title: str
        body: str = ""

    schema = Tool("issue", "d", IssueArgs, lambda a: ToolResult("x")).json_schema()
    assert set(schema["properties"]) == {"title", "body"}


def test_tool_result_defaults():
    result = ToolResult("hello")
    assert (result.text, result.error, result.done, dict(result.info)) == ("hello", None, False, {})
    assert submit_tool().run(SubmitArgs()) == ToolResult("submitted", done=True)
