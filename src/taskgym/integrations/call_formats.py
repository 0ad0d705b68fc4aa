"""Scanners for the tool-call formats of today's chat templates (used by
:func:`taskgym.integrations.tool_calls.parse_tool_calls`).

Each scanner walks the text with ``str.find`` and ``json.JSONDecoder.raw_decode`` (no regular
expression that could backtrack over a long text) and reports every call it meets as a
:class:`Found`: where it is, and either its name and arguments or why it is malformed.
The forms, as the chat templates shipped with TRL 1.16 render them:

- ``hermes`` (Qwen2.5, Qwen3, Qwen3-2507, Qwen3-VL):
  ``<tool_call>\\n{"name": "f", "arguments": {...}}\\n</tool_call>``;
- ``xml`` (Qwen3.5/3.6/3.8, Qwen3-Coder, Nemotron 3): ``<tool_call>\\n<function=f>\\n``
  ``<parameter=a>\\nvalue\\n</parameter>\\n</function>\\n</tool_call>``, values as text;
- ``glm`` (GLM-4-MoE): ``<tool_call>f\\n<arg_key>a</arg_key>\\n<arg_value>value</arg_value>``
  ``\\n</tool_call>``, values as text (JSON for what is not a string);
- ``llama`` (Llama 3.1/3.2): the whole reply is ``{"name": "f", "parameters": {...}}``,
  after ``<|python_tag|>`` or not, several separated by ``;``;
- ``harmony`` (GPT-OSS): a message whose header names ``to=functions.f``, such as
  ``<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{...}<|call|>`` or
  ``<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{...}``
  ``<|call|>``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Found", "is_llama_call", "scan_harmony", "scan_llama", "scan_tagged", "tagged_kind"]

OPEN, CLOSE = "<tool_call>", "</tool_call>"
PYTHON_TAG = "<|python_tag|>"
MESSAGE, START = "<|message|>", "<|start|>"
HARMONY_ENDS = ("<|call|>", "<|end|>", "<|return|>")
_DECODER = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


@dataclass
class Found:
    """One call in the text: ``text[start:end]``, with its name and arguments, or an error.
    ``text_values``: the argument values are the model's text, to be typed by the schema."""

    start: int
    end: int
    kind: str
    name: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    text_values: bool = False


class _Malformed(Exception):
    pass


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WHITESPACE:
        pos += 1
    return pos


def _json_at(text: str, pos: int, what: str) -> tuple[Any, int]:
    try:
        return _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        raise _Malformed(f"{what} is not valid JSON: {exc.msg} at character "
                         f"{exc.pos - pos}") from None
    except RecursionError:
        raise _Malformed(f"{what} is nested too deeply") from None


def _call_object(value: Any, arguments_keys: tuple[str, ...]) -> tuple[str, dict[str, Any]]:
    """(name, arguments) of a decoded ``{"name": ..., "arguments": {...}}``."""
    if not isinstance(value, dict):
        raise _Malformed(f"the call must be a JSON object, not {type(value).__name__}")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise _Malformed('the call has no "name" string')
    present = [k for k in arguments_keys if k in value]
    args = value[present[0]] if present else {}
    if isinstance(args, str):  # arguments sent as a JSON string, as OpenAI's API does
        args = _json_at(args, _skip(args, 0), f"the arguments of {name}")[0] if args.strip() else {}
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise _Malformed(f"the arguments of {name} must be a JSON object, not "
                         f"{type(args).__name__}")
    return name, args


def tagged_kind(text: str, body: int) -> str:
    """Which ``<tool_call>`` form starts at ``body`` (just after the tag)."""
    pos = _skip(text, body)
    if text.startswith("{", pos):
        return "hermes"
    return "xml" if text.startswith("<function=", pos) else "glm"


def scan_tagged(text: str, start: int, kind: str | None) -> list[Found]:
    """Every ``<tool_call>`` block from ``start``, read as ``kind`` (``None``: each by its
    own look)."""
    found = []
    pos = text.find(OPEN, start)
    while pos != -1:
        body = pos + len(OPEN)
        block_kind = kind or tagged_kind(text, body)
        reader = {"hermes": _hermes, "xml": _xml, "glm": _glm}[block_kind]
        try:
            end, name, args = reader(text, body)
            found.append(Found(pos, end, block_kind, name, args, text_values=block_kind != "hermes"))
        except _Malformed as exc:
            close = text.find(CLOSE, body)
            end = len(text) if close == -1 else close + len(CLOSE)
            found.append(Found(pos, end, block_kind, error=str(exc)))
        pos = text.find(OPEN, end)
    return found


def _closed(text: str, pos: int) -> int:
    """The end of the block once its content ends at ``pos``: after ``</tool_call>``, or the
    end of the text (a reply cut right after the call)."""
    pos = _skip(text, pos)
    if text.startswith(CLOSE, pos):
        return pos + len(CLOSE)
    if pos == len(text):
        return pos
    raise _Malformed(f"unexpected text {text[pos:pos + 40]!r} where {CLOSE} should be")


def _closing(text: str, tag: str, start: int, what: str) -> int:
    """Where ``tag`` closes ``what`` (found from ``start``), else the malformed call."""
    end = text.find(tag, start)
    if end == -1:
        raise _Malformed(f"{what} is not closed by {tag}")
    return end


def _keep(args: dict[str, Any], key: str, value: str, what: str) -> None:
    """``args[key] = value``, unless ``what`` (the argument) was given already."""
    if key in args:
        raise _Malformed(f"{what} is given twice")
    args[key] = value


def _hermes(text: str, body: int) -> tuple[int, str, dict[str, Any]]:
    value, end = _json_at(text, _skip(text, body), "the call")
    name, args = _call_object(value, ("arguments", "parameters"))
    return _closed(text, end), name, args


def _xml(text: str, body: int) -> tuple[int, str, dict[str, Any]]:
    pos = _skip(text, body)
    if not text.startswith("<function=", pos):
        raise _Malformed("expected <function=NAME> after <tool_call>")
    close = text.find(">", pos)
    name = text[pos + len("<function="):close] if close != -1 else ""
    if not name or any(c in name for c in "\n<"):
        raise _Malformed("the <function=NAME> tag names no function")
    pos, args = close + 1, dict[str, Any]()
    while True:
        pos = _skip(text, pos)
        if text.startswith("<parameter=", pos):
            close = text.find(">", pos)
            key = text[pos + len("<parameter="):close] if close != -1 else ""
            if not key or any(c in key for c in "\n<"):
                raise _Malformed(f"a <parameter=NAME> tag of {name} names no parameter")
            what = f"the parameter {key!r} of {name}"
            end = _closing(text, "</parameter>", close, what)
            value = text[close + 1:end]
            value = value[1:] if value.startswith("\n") else value
            _keep(args, key, value[:-1] if value.endswith("\n") else value, what)
            pos = end + len("</parameter>")
        elif text.startswith("</function>", pos):
            return _closed(text, pos + len("</function>")), name, args
        elif text.startswith(CLOSE, pos) or pos == len(text):
            return _closed(text, pos), name, args
        else:
            raise _Malformed(f"unexpected text {text[pos:pos + 40]!r} in the call of {name}")


def _glm(text: str, body: int) -> tuple[int, str, dict[str, Any]]:
    ends = [i for i in (text.find("\n", body), text.find("<arg_key>", body),
                        text.find(CLOSE, body)) if i != -1]
    stop = min(ends) if ends else len(text)
    name = text[body:stop].strip()
    if not name or any(c.isspace() or c == "<" for c in name):
        raise _Malformed("the call names no function after <tool_call>")
    pos, args = stop, dict[str, Any]()
    while True:
        pos = _skip(text, pos)
        if not text.startswith("<arg_key>", pos):
            return _closed(text, pos), name, args
        end = _closing(text, "</arg_key>", pos, f"an <arg_key> of {name}")
        key = text[pos + len("<arg_key>"):end]
        pos = _skip(text, end + len("</arg_key>"))
        if not text.startswith("<arg_value>", pos):
            raise _Malformed(f"the argument {key!r} of {name} has no <arg_value>")
        end = _closing(text, "</arg_value>", pos, f"the value of {key!r} of {name}")
        _keep(args, key, text[pos + len("<arg_value>"):end], f"the argument {key!r} of {name}")
        pos = end + len("</arg_value>")


def is_llama_call(text: str, start: int) -> bool:
    """Whether the reply from ``start`` is Llama's JSON call form (a ``<|python_tag|>``, or
    an object whose first key is ``"name"``)."""
    pos = _skip(text, start)
    if text.startswith(PYTHON_TAG, pos):
        return True
    if not text.startswith("{", pos):
        return False
    pos = _skip(text, pos + 1)
    return text.startswith('"name"', pos)


def scan_llama(text: str, start: int) -> list[Found]:
    """Llama 3.1's calls: JSON objects that make up the start of the reply."""
    if not is_llama_call(text, start):
        return []
    found = []
    pos = _skip(text, start)
    if text.startswith(PYTHON_TAG, pos):
        pos = _skip(text, pos + len(PYTHON_TAG))
    first = True
    while first or text.startswith("{", pos):
        first = False
        try:
            value, end = _json_at(text, pos, "the call")
            name, args = _call_object(value, ("parameters", "arguments"))
            found.append(Found(pos, end, "llama", name, args))
        except _Malformed as exc:
            stops = [i for i in (text.find("<|eot_id|>", pos), text.find("<|eom_id|>", pos))
                     if i != -1]
            found.append(Found(pos, min(stops) if stops else len(text), "llama", error=str(exc)))
            break
        pos = _skip(text, end)
        while text.startswith(";", pos):
            pos = _skip(text, pos + 1)
    return found


def scan_harmony(text: str, start: int) -> list[Found]:
    """GPT-OSS's calls: messages whose header sends them ``to=functions.NAME``."""
    found = []
    pos = start
    while (message := text.find(MESSAGE, pos)) != -1:
        opened = text.rfind(START, pos, message)
        header_start = opened if opened != -1 else pos
        header = text[header_start:message]
        body = message + len(MESSAGE)
        ends = [(i, len(t)) for t in (*HARMONY_ENDS, START) if (i := text.find(t, body)) != -1]
        body_end, marker = min(ends) if ends else (len(text), 0)
        end = body_end + (marker if text.startswith(HARMONY_ENDS, body_end) else 0)
        pos = end
        recipient = header.find("to=")
        if recipient == -1:
            continue
        words = header[recipient + 3:].split("<|", 1)[0].split()
        target = words[0] if words else ""
        if target == "assistant":  # a tool's answer to the assistant, not a call
            continue
        if not target.startswith("functions.") or len(target) == len("functions."):
            found.append(Found(header_start, end, "harmony",
                               error=f"the message is sent to {target or 'nobody'!r}, not to a "
                                     "function: call a tool as to=functions.NAME"))
            continue
        name = target[len("functions."):]
        try:
            content = text[body:body_end]
            pos_json = _skip(content, 0)
            value, json_end = _json_at(content, pos_json, f"the arguments of {name}")
            if content[json_end:].strip():
                raise _Malformed(f"unexpected text after the arguments of {name}")
            if not isinstance(value, dict):
                raise _Malformed(f"the arguments of {name} must be a JSON object, not "
                                 f"{type(value).__name__}")
            found.append(Found(header_start, end, "harmony", name, value))
        except _Malformed as exc:
            found.append(Found(header_start, end, "harmony", error=str(exc)))
    return found
