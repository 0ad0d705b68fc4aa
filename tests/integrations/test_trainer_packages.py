"""The shared trainer core against the real packages: transformers 5.25's ``get_json_schema``
reads every registered env's generated tool methods back to the env's own schemas, and the
chat templates shipped in the trl 1.16 wheel render tool calls that ``parse_tool_calls``
reads back.

These tests need ``transformers``, ``jinja2`` and the trl wheel's files (installed without
its dependencies); ``scripts/test_integrations.sh`` makes that venv and runs them with
``-m trainers``. The main run deselects them with ``-m "not trainers"``; selected without
the packages they fail, they do not skip.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.integrations import LOST_KEYWORDS, NO_DESCRIPTION, env_tools, parse_tool_calls, tool_class

pytestmark = pytest.mark.trainers

# what the generated signatures drop from the schemas of today's envs, listed one by one
LOST_FROM_PROPERTIES = {"default", "maxLength", "minLength", "minimum", "maximum",
                        "exclusiveMinimum", "minItems", "maxItems", "additionalProperties"}
LOST_FROM_PARAMETERS = {"additionalProperties", "description"}

# every TRL-shipped template of the five formats (trl/chat_template_utils.py add_response_schema)
TEMPLATES = {
    "qwen2_5": "hermes", "qwen3": "hermes", "qwen3_instruct_2507": "hermes", "qwen3_vl": "hermes",
    "qwen3_5_nothink": "xml", "qwen3_5_think": "xml", "qwen3_6": "xml", "qwen3_8": "xml",
    "nemotron_3_nano": "xml", "nemotron_3_super": "xml", "nemotron_3_ultra": "xml",
    "nemotron_3_5_lightning": "xml",
    "glm4moe": "glm",
    "llama3_1": "llama", "llama3_2": "llama",
    "gptoss": "harmony",
}
ONE_CALL_PER_MESSAGE = {"llama", "harmony"}  # these templates render a message's first call only


@pytest.fixture(scope="module")
def transformers_utils() -> Any:
    try:
        from transformers.utils import chat_template_utils
    except ImportError as exc:  # selected on purpose: a missing package is a failure
        pytest.fail(f"the trainers tests need transformers==5.25.0 ({exc}); run "
                    "scripts/test_integrations.sh, or deselect them with -m 'not trainers'")
    return chat_template_utils


@pytest.fixture(scope="module")
def trl_templates() -> Path:
    spec = importlib.util.find_spec("trl")  # finds the package without importing it (torch)
    if spec is None or not spec.submodule_search_locations:
        pytest.fail("the trainers tests need the trl==1.16.0 wheel's files (pip install "
                    "--no-deps trl==1.16.0); run scripts/test_integrations.sh")
    return Path(next(iter(spec.submodule_search_locations))) / "chat_templates"


ENV_IDS = sorted(taskgym.list_envs())


def _canonical(schema: Any, defs: dict[str, Any]) -> frozenset[Any]:
    """The types a schema allows, as a set of alternatives (unions, nullable and type lists
    made alike; enums, descriptions and the lost keywords left out)."""
    if not isinstance(schema, dict):
        return frozenset({("any",)})
    if isinstance(schema.get("$ref"), str):
        schema = {**defs[schema["$ref"].rsplit("/", 1)[-1]], **schema}
        del schema["$ref"]
    alternatives: set[Any] = set()
    for part in schema.get("anyOf") or schema.get("oneOf") or ():
        alternatives |= _canonical(part, defs)
    kinds = schema.get("type")
    for kind in [kinds] if isinstance(kinds, str) else kinds or ():
        if kind == "array":
            items = schema.get("items")
            prefix = schema.get("prefixItems")
            alternatives.add(("array", _canonical(items, defs) if items not in (None, {}) else None,
                              tuple(_canonical(p, defs) for p in prefix) if prefix else None))
        elif kind == "object":
            extra = schema.get("additionalProperties")
            alternatives.add(("object", _canonical(extra, defs)
                              if isinstance(extra, dict) and extra else None))
        else:
            alternatives.add((kind,))
    if schema.get("nullable"):
        alternatives.add(("null",))
    return frozenset(alternatives or {("any",)})


def _enum(schema: dict[str, Any]) -> list[Any] | None:
    if "enum" in schema:
        return [v for v in schema["enum"] if v is not None]
    enums = [_enum(s) for s in schema.get("anyOf", ()) if isinstance(s, dict)]
    enums = [e for e in enums if e is not None]
    return enums[0] if enums else None


def _keywords(schema: Any) -> set[str]:
    """Every keyword used at any depth of a property's schema."""
    if isinstance(schema, list):
        return set().union(*map(_keywords, schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    return set(schema) | set().union(*(_keywords(v) for k, v in schema.items()
                                        if k not in ("enum", "const", "default")))


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_get_json_schema_reads_each_generated_method_back_to_the_env_schema(
        env_id: str, transformers_utils: Any) -> None:
    cls = tool_class(env_id)
    holder = cls.__new__(cls)  # bound methods, as TRL passes them; no env needed to read them
    lost: set[str] = set()
    for tool in env_tools(env_id):
        want = tool.openai()["function"]
        for method in (getattr(cls, tool.name), getattr(holder, tool.name)):
            got = transformers_utils.get_json_schema(method)["function"]
            assert got["name"] == want["name"]
            assert got["description"] == want["description"]
            assert got["return"] == {"type": "string", "description": "The observation's text."}
            params, wanted = got["parameters"], want["parameters"]
            assert params["type"] == "object"
            assert sorted(params.get("required", [])) == sorted(wanted.get("required", []))
            assert list(params["properties"]) == list(wanted["properties"])
            defs = wanted.get("$defs", {})
            for arg, schema in wanted["properties"].items():
                read = params["properties"][arg]
                assert read["description"] == (" ".join(schema.get("description", "").split())
                                               or NO_DESCRIPTION), (tool.name, arg)
                assert _canonical(read, {}) == _canonical(schema, defs), (tool.name, arg, read)
                assert _enum(read) == _enum(schema), (tool.name, arg)
                kept = _keywords(read) | {"anyOf", "oneOf", "$ref"}
                lost |= _keywords(schema) - kept
            lost |= {f"parameters.{k}" for k in set(wanted) - {"type", "properties", "required"}}
    assert lost <= LOST_FROM_PROPERTIES | {f"parameters.{k}" for k in LOST_FROM_PARAMETERS}
    assert LOST_FROM_PROPERTIES | LOST_FROM_PARAMETERS <= LOST_KEYWORDS


def test_the_lost_keywords_are_seen_in_todays_envs(transformers_utils: Any) -> None:
    # the explicit lists above are what the envs use: each one is met by some tool
    used: set[str] = set()
    for env_id in ENV_IDS:
        for tool in env_tools(env_id):
            parameters = tool.json_schema()
            used |= {f"parameters.{k}" for k in parameters} | set().union(
                *(_keywords(s) for s in parameters["properties"].values()))
    assert LOST_FROM_PROPERTIES <= used
    assert {f"parameters.{k}" for k in LOST_FROM_PARAMETERS} <= used


def test_trl_sees_exactly_the_tools(transformers_utils: Any) -> None:
    for env_id in ENV_IDS:
        cls = tool_class(env_id)
        holder = cls.__new__(cls)
        seen = [getattr(holder, n) for n, _ in inspect.getmembers(type(holder), inspect.isfunction)
                if n not in ("reset", "get_reward") and not n.startswith("_")]
        assert sorted(m.__name__ for m in seen) == sorted(t.name for t in env_tools(env_id))
        # the chat template input TRL builds from them
        schemas = [transformers_utils.get_json_schema(m) for m in seen]
        assert all(s["type"] == "function" for s in schemas)


# -- chat templates ----------------------------------------------------------------------
TRICKY = 'line one\n  "quoted" <b>tag</b> & ünïcødé \\ back\tslash\n'


def _sample(schema: dict[str, Any], arg: str, defs: dict[str, Any], json_form: bool) -> Any:
    """A value for one argument that the schema allows, and that is hard to carry."""
    if isinstance(schema.get("$ref"), str):
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    if "enum" in schema:
        return schema["enum"][-1]
    if "anyOf" in schema:
        return _sample(next(s for s in schema["anyOf"] if s.get("type") != "null"), arg, defs,
                       json_form)
    kind = schema.get("type")
    if kind == "string":
        text = f"{arg}: {TRICKY}"
        return text + " </tool_call> {\"name\": 1}" if json_form else text
    if kind == "integer":
        return 7
    if kind == "number":
        return 2.5
    if kind == "boolean":
        return True
    if kind == "array":
        if "prefixItems" in schema:
            return [_sample(s, arg, defs, json_form) for s in schema["prefixItems"]]
        return [_sample(schema.get("items", {"type": "string"}), arg, defs, json_form)]
    if kind == "object":
        return {"action": "add", "name": "N", "nested": [1, 2.5, None, True]}
    return "x"


def _calls(env_id: str, json_form: bool) -> list[dict[str, Any]]:
    calls = []
    for tool in env_tools(env_id):
        parameters = tool.json_schema()
        defs = parameters.get("$defs", {})
        args = {arg: _sample(schema, arg, defs, json_form)
                for arg, schema in parameters["properties"].items()}
        calls.append({"tool": tool.name, "args": args})
    return calls


def _completion(utils: Any, template: str, tools: list[dict[str, Any]],
                calls: list[dict[str, Any]], content: str) -> str:
    """The assistant turn the template renders for ``calls``: the chat with it, less the
    prompt that asks for it."""
    user = {"role": "user", "content": "Do the task."}
    assistant: dict[str, Any] = {"role": "assistant", "content": content, "tool_calls": [
        {"id": f"call_{i}", "type": "function",
         "function": {"name": c["tool"], "arguments": c["args"]}} for i, c in enumerate(calls)]}
    (full,), _ = utils.render_jinja_template(conversations=[[user, assistant]], tools=tools,
                                             chat_template=template)
    (prompt,), _ = utils.render_jinja_template(conversations=[[user]], tools=tools,
                                               chat_template=template, add_generation_prompt=True)
    shared = 0
    while shared < min(len(full), len(prompt)) and full[shared] == prompt[shared]:
        shared += 1
    return str(full[shared:])


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_tool_calls_rendered_by_each_trl_template_parse_back(
        name: str, transformers_utils: Any, trl_templates: Path) -> None:
    style = TEMPLATES[name]
    template = (trl_templates / f"{name}.jinja").read_text(encoding="utf-8")
    checked = 0
    for env_id in ENV_IDS:
        tools = [t.openai() for t in env_tools(env_id)]
        calls = _calls(env_id, json_form=style in ("hermes", "llama", "harmony"))
        batches = [[c] for c in calls] if style in ONE_CALL_PER_MESSAGE else [calls]
        for batch in batches:
            content = "" if style == "llama" else "Let me look first."
            completion = _completion(transformers_utils, template, tools, batch, content)
            for chosen in (style, "auto"):
                parsed = parse_tool_calls(completion, style=chosen, tools=tools)  # type: ignore[arg-type]
                assert parsed.errors == (), (completion, parsed.errors)
                assert parsed.style == style
                assert [{"tool": c["tool"], "args": c["args"]} for c in parsed.calls] == batch, (
                    completion)
                assert [c["id"] for c in parsed.calls] == [f"call_{i}" for i in range(len(batch))]
                if content and style != "harmony":
                    assert content in parsed.text
            checked += len(batch)
    assert checked >= sum(len(env_tools(e)) for e in ENV_IDS)


def test_the_templates_render_what_their_style_expects(transformers_utils: Any,
                                                       trl_templates: Path) -> None:
    # one call of each form, spelled out, so a template change shows as a diff here
    tools = [t.openai() for t in env_tools("coding-terminal-v0")]
    call = [{"tool": "write_file", "args": {"path": "a.txt", "content": "hi", "executable": True}}]
    seen = {name: _completion(transformers_utils,
                              (trl_templates / f"{name}.jinja").read_text(encoding="utf-8"),
                              tools, call, "")
            for name in ("qwen3", "qwen3_6", "glm4moe", "llama3_1", "gptoss")}
    args = json.dumps(call[0]["args"])
    assert f'<tool_call>\n{{"name": "write_file", "arguments": {args}}}\n</tool_call>' in seen["qwen3"]
    assert ("<tool_call>\n<function=write_file>\n<parameter=path>\na.txt\n</parameter>\n"
            "<parameter=content>\nhi\n</parameter>\n<parameter=executable>\ntrue\n</parameter>\n"
            "</function>\n</tool_call>") in seen["qwen3_6"]
    assert ("<tool_call>write_file\n<arg_key>path</arg_key>\n<arg_value>a.txt</arg_value>\n"
            "<arg_key>content</arg_key>\n<arg_value>hi</arg_value>\n<arg_key>executable</arg_key>"
            "\n<arg_value>true</arg_value>\n</tool_call>") in seen["glm4moe"]
    assert seen["llama3_1"].startswith(f'{{"name": "write_file", "parameters": {args}}}<|eot_id|>')
    assert (f"to=functions.write_file<|channel|>commentary json<|message|>{args}<|call|>"
            in seen["gptoss"])
