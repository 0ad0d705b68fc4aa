"""A model's reply to taskgym actions: :func:`parse_tool_calls`.

A trainer that owns the generation loop gets text from the model and must turn the tool
calls in it into actions for ``env.step``. The formats differ by model family (see
:mod:`taskgym.integrations.call_formats` for each, as the chat templates render them):
``hermes``, ``xml``, ``glm``, ``llama`` and ``harmony``; ``auto`` tells them apart.

Parsing never raises for any text. A call that cannot be read (bad JSON, an unclosed tag, no
name) is an :class:`ToolCallError` in :attr:`ToolCallParse.errors`, with the same kind of id
as a call, for the caller to answer with an error observation. The name and arguments of a
call that can be read are not checked against the tools: ``env.step`` does that, and its
error observation names the tool or argument that is wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from taskgym.core.tool import Tool
from taskgym.errors import ConfigError
from taskgym.integrations.call_formats import (
    OPEN,
    Found,
    is_llama_call,
    scan_harmony,
    scan_llama,
    scan_tagged,
    tagged_kind,
)

__all__ = ["STYLES", "ToolCallError", "ToolCallParse", "ToolCallStyle", "coerce_value",
           "parse_tool_calls"]

ToolCallStyle = Literal["auto", "hermes", "xml", "glm", "llama", "harmony"]
STYLES: tuple[str, ...] = get_args(ToolCallStyle)
RAW_LIMIT = 2_000
"""Characters of a malformed call kept in :attr:`ToolCallError.raw`."""
_INTEGER = re.compile(r"-?\d+")
_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][-+]?\d+)?")


@dataclass(frozen=True, slots=True)
class ToolCallError:
    """A call that could not be read."""

    id: str
    """The call's id, numbered with the calls (``call_2`` is the third call of the text)."""
    message: str
    """What is wrong, for an error observation."""
    raw: str
    """The call's text as the model wrote it (its first :data:`RAW_LIMIT` characters)."""


@dataclass(frozen=True, slots=True)
class ToolCallParse:
    """What :func:`parse_tool_calls` found in a reply.

    ``calls`` are actions ``env.step`` accepts as they are: ``{"id": "call_0", "tool":
    "bash", "args": {...}}``, in the order of the text. ``errors`` are the calls that could
    not be read; ids number calls and errors together in the order of the text. ``text`` is
    the reply with every call cut out (reasoning and prose, stripped). ``style`` is the
    format read (``auto`` reports the one it detected; ``"none"`` when nothing looked like a
    call).
    """

    calls: tuple[dict[str, Any], ...]
    errors: tuple[ToolCallError, ...]
    text: str
    style: str


def parse_tool_calls(text: str, style: ToolCallStyle = "auto",
                     tools: Iterable[Tool | Mapping[str, Any]] | None = None, *,
                     id_prefix: str = "call_") -> ToolCallParse:
    """The tool calls in ``text``, a model's reply, as taskgym actions; never raises for any
    text.

    ``style`` is one of :data:`STYLES`; ``"auto"`` detects it. ``tools`` (taskgym
    :class:`Tool` objects, OpenAI tool specs such as ``info["tools"]``, or ``{"name",
    "parameters"}`` dicts) type the argument values of the formats that write them as text
    (``xml``, ``glm``): ``"7"`` becomes 7 for an integer, JSON is read for arrays and
    objects, ``true``/``True`` for booleans, ``null``/``None`` where null is allowed; without
    them, or for an argument they do not describe, the values stay text. Calls inside a
    ``<think>`` block are reasoning, not calls. Call ids are ``id_prefix`` and the position.
    """
    if style not in STYLES:
        raise ConfigError(f"unknown tool-call style {style!r}; choose from {', '.join(STYLES)}")
    schemas = _parameters_by_name(tools)
    if not isinstance(text, str):
        return ToolCallParse((), (ToolCallError(f"{id_prefix}0", "the reply is not text", ""),),
                             "", style)
    try:
        used, found = _scan(text, style)
    except Exception as exc:  # a bug of a scanner must not crash the caller's loop
        error = ToolCallError(f"{id_prefix}0", f"could not read the reply: "
                              f"{type(exc).__name__}: {exc}"[:500], text[:RAW_LIMIT])
        return ToolCallParse((), (error,), text.strip(), style)
    calls: list[dict[str, Any]] = []
    errors: list[ToolCallError] = []
    outside: list[str] = []
    last = 0
    for number, item in enumerate(found):
        call_id = f"{id_prefix}{number}"
        outside.append(text[last:item.start])
        last = item.end
        if item.error is not None or item.name is None:
            errors.append(ToolCallError(call_id, item.error or "the call names no tool",
                                        text[item.start:item.end][:RAW_LIMIT]))
            continue
        args = item.args
        if item.text_values:
            schema = schemas.get(item.name, {})
            properties = schema.get("properties") or {}
            defs = {**schema.get("definitions", {}), **schema.get("$defs", {})}
            args = {key: coerce_value(value, properties[key], defs) if key in properties else value
                    for key, value in args.items()}
        calls.append({"id": call_id, "tool": item.name, "args": args})
    outside.append(text[last:])
    return ToolCallParse(tuple(calls), tuple(errors), "".join(outside).strip(), used)


def _scan(text: str, style: str) -> tuple[str, list[Found]]:
    """(the style read, every call found)."""
    if style == "harmony" or (style == "auto" and ("<|message|>" in text
                                                   or "<|channel|>" in text)):
        return "harmony", scan_harmony(text, 0)
    start = _after_reasoning(text, style)
    if style == "llama" or (style == "auto" and OPEN not in text[start:]
                            and is_llama_call(text, start)):
        return "llama", scan_llama(text, start)
    if style == "auto":
        first = text.find(OPEN, start)
        if first == -1:
            return "none", []
        return tagged_kind(text, first + len(OPEN)), scan_tagged(text, start, None)
    return style, scan_tagged(text, start, style)


def _after_reasoning(text: str, style: str) -> int:
    """Where the reply's answer starts: after the first ``</think>`` when it closes a
    ``<think>``, or when the template opened the block in the prompt (the reply has no
    ``<think>``) and the ``</think>`` is not text inside a call; else 0."""
    close = text.find("</think>")
    if close == -1:
        return 0
    opened = text.find("<think>")
    if opened != -1:
        return close + len("</think>") if opened < close else 0
    first_call = text.find(OPEN)
    if first_call == -1 or close < first_call:
        return close + len("</think>")
    kind = style if style in ("hermes", "xml", "glm") else None
    inside = any(f.start <= close < f.end for f in scan_tagged(text, 0, kind))
    return 0 if inside else close + len("</think>")


def _parameters_by_name(tools: Iterable[Tool | Mapping[str, Any]] | None) -> dict[str, Any]:
    """Each tool's parameters schema, by name."""
    found: dict[str, Any] = {}
    for tool in tools or ():
        if isinstance(tool, Tool):
            found[tool.name] = tool.json_schema()
            continue
        if not isinstance(tool, Mapping):
            raise ConfigError(f"a tool must be a taskgym Tool or an OpenAI tool spec, not "
                              f"{type(tool).__name__}")
        spec = tool.get("function", tool)
        if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
            parameters = spec.get("parameters")
            found[spec["name"]] = parameters if isinstance(parameters, Mapping) else {}
    return found


def coerce_value(raw: str, schema: Any, defs: Mapping[str, Any] | None = None) -> Any:
    """``raw``, an argument value the model wrote as text, typed by its JSON ``schema``: the
    enum value it spells, ``None`` for ``null``/``None`` where null is allowed, an integer,
    a number, a boolean (``true``/``false`` in any case), or the JSON array or object it
    holds, tried in that order among the types the schema allows; else the text itself (a
    string argument, or a value that is none of its types, which ``env.step`` then reports)."""
    kinds, enum = _kinds(schema, defs or {}, 0)
    bare = raw.strip()
    for value in enum:
        if raw == value or bare == json.dumps(value) or (not isinstance(value, str)
                                                         and bare == str(value)):
            return value
    if "null" in kinds and bare in ("null", "None"):
        return None
    if "integer" in kinds and _INTEGER.fullmatch(bare):
        return int(bare)
    if "number" in kinds and _NUMBER.fullmatch(bare):
        number = float(bare)
        return int(bare) if _INTEGER.fullmatch(bare) else number
    if "boolean" in kinds and bare.lower() in ("true", "false"):
        return bare.lower() == "true"
    if ("array" in kinds or "object" in kinds) and bare[:1] in ("[", "{"):
        try:
            value = json.loads(bare)
        except (ValueError, RecursionError):
            return raw
        if isinstance(value, list) and "array" in kinds or isinstance(value, dict) and "object" in kinds:
            return value
    return raw


def _kinds(schema: Any, defs: Mapping[str, Any], depth: int) -> tuple[set[str], list[Any]]:
    """The JSON types ``schema`` allows and its enum values, through ``$ref``, ``anyOf``,
    ``oneOf``, single ``allOf``, type lists and ``nullable``."""
    kinds: set[str] = set()
    enum: list[Any] = []
    if not isinstance(schema, Mapping) or depth > 32:
        return kinds, enum
    ref = schema.get("$ref")
    if isinstance(ref, str) and isinstance(defs.get(ref.rsplit("/", 1)[-1]), Mapping):
        kinds, enum = _kinds(defs[ref.rsplit("/", 1)[-1]], defs, depth + 1)
    declared = schema.get("type")
    kinds.update([declared] if isinstance(declared, str) else
                 [k for k in declared if isinstance(k, str)] if isinstance(declared, list) else [])
    if schema.get("nullable") is True:
        kinds.add("null")
    if isinstance(schema.get("enum"), list):
        enum.extend(schema["enum"])
    if "const" in schema:
        enum.append(schema["const"])
    for key in ("anyOf", "oneOf", "allOf"):
        for part in schema.get(key) or () if isinstance(schema.get(key), list) else ():
            more, values = _kinds(part, defs, depth + 1)
            kinds |= more
            enum.extend(values)
    kinds.update({"boolean" if type(v) is bool else "integer" if type(v) is int else
                  "number" if type(v) is float else "null" if v is None else "string"
                  for v in enum})
    return kinds, enum
