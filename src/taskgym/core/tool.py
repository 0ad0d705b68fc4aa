"""Tools: what the agent can call, with a JSON schema, and how actions are parsed.

An action names a tool and its arguments. It may come as a dict
(``{"tool": "bash", "args": {...}}``), the same as a JSON string, or an OpenAI
``tool_call`` (object or dict, arguments as a JSON string). Parsing never raises: a
malformed action yields an :class:`ActionError` whose message says exactly what was wrong.
Every string of a valid call (its arguments, keys and values at any depth, and its id) is
text that encodes as UTF-8: lone surrogates such as ``"\\ud800"`` and undecodable bytes are
refused here, so no tool ever meets them.
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, ValidationError

if TYPE_CHECKING:
    from taskgym.sandbox.shell.plans import Plan

__all__ = ["ActionError", "SubmitArgs", "Tool", "ToolArgs", "ToolCall", "ToolResult", "inline_async",
           "inline_plan", "parse_action", "submit_tool"]

MAX_ACTION_CHARS = 1_000_000
"""Largest action accepted, in characters of its JSON form."""


class ToolArgs(BaseModel):
    """The base of a tool's argument model: an argument the model does not declare is refused."""

    model_config = ConfigDict(extra="forbid")


@dataclass(slots=True)
class ToolResult:
    """What a tool returns to the env: the text the agent sees and flags."""

    text: str
    error: str | None = None
    """Set when the call itself failed (bad path, refused): ``info["error"]``."""
    done: bool = False
    """The episode ends after this call (``submit``)."""
    info: Mapping[str, Any] = field(default_factory=dict)
    images: tuple[bytes, ...] = ()
    """PNG images the call produced (a render, a page), for vision models: ``info["images"]``."""


@functools.lru_cache(maxsize=512)
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema, titles removed, made once per model (every env makes its
    tools' schemas, and a forked env is one more env)."""
    schema: dict[str, Any] = _strip_titles(model.model_json_schema())
    return schema


@dataclass(frozen=True)
class Tool:
    """A named action with a pydantic model for its arguments.

    ``run`` does the call; ``arun``, when given, is the same call for asyncio (the env's
    ``astep`` awaits it). A tool without ``arun`` is run by ``astep`` in the bounded pool
    (:mod:`taskgym.sandbox.host.blocking`), so a slow one never blocks the event loop. ``plan``,
    when given, is the same call as a plan (:mod:`taskgym.sandbox.shell.plans`), for the vector
    env's loop, which waits on every sub-env's sandbox at once; without one, that loop runs
    ``run`` in the bounded pool.
    """

    name: str
    description: str
    args: type[BaseModel]
    run: Callable[[Any], ToolResult]
    arun: Callable[[Any], Awaitable[ToolResult]] | None = None
    plan: Callable[[Any], Plan[ToolResult]] | None = None

    def json_schema(self) -> dict[str, Any]:
        """The arguments' JSON schema (titles removed)."""
        return copy.deepcopy(_schema_of(self.args))

    def openai(self) -> dict[str, Any]:
        """The tool in OpenAI's function-calling format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.json_schema(),
            },
        }


def inline_async(run: Callable[[Any], ToolResult]) -> Callable[[Any], Awaitable[ToolResult]]:
    """An ``arun`` that calls ``run`` on the event loop itself: for a tool too quick to be
    worth a thread (a few system calls), which ``astep`` would otherwise run in the pool."""

    async def arun(args: Any) -> ToolResult:
        return run(args)

    return arun


def inline_plan(run: Callable[[Any], ToolResult]) -> Callable[[Any], Plan[ToolResult]]:
    """A ``plan`` that calls ``run`` where the plan is driven, waiting for nothing: for a
    tool too quick to be worth a thread, as :func:`inline_async`."""

    def plan(args: Any) -> Plan[ToolResult]:
        yield from ()
        return run(args)

    return plan


@dataclass(slots=True)
class ToolCall:
    """A parsed, validated action."""

    tool: Tool
    args: BaseModel
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ActionError:
    """Why an action could not be used."""

    message: str


def _strip_titles(schema: Any, names: bool = False) -> Any:
    """Drop pydantic's generated ``title`` keys; ``names`` marks a mapping of field names."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v, names=(k == "properties" and not names))
                for k, v in schema.items() if names or not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def _loads(text: str, what: str) -> Any:
    if len(text) > MAX_ACTION_CHARS:
        raise _Bad(f"{what} is {len(text):,} characters; the limit is {MAX_ACTION_CHARS:,}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        reason = exc.msg.removesuffix(" at")  # some messages end in "at" already
        raise _Bad(f"{what} is not valid JSON: {reason} at line {exc.lineno} "
                   f"column {exc.colno}") from None


_PLAIN_KEYS = {"tool", "args"}


class _Bad(Exception):
    pass


def _text(data: str | bytes, what: str) -> str:
    """``data`` as a string that encodes as UTF-8, else :class:`_Bad` saying where it fails."""
    if isinstance(data, bytes):
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Bad(f"{what} is not UTF-8: byte {data[exc.start]:#04x} at position "
                       f"{exc.start} cannot be decoded; send UTF-8 text") from None
    if not data.isascii():
        try:
            data.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise _Bad(f"{what} holds {data[exc.start:exc.end]!r} at character {exc.start}, a "
                       "lone surrogate, which is not Unicode text and cannot be encoded as "
                       "UTF-8; send UTF-8 text") from None
    return data


def _check_values(name: str, args: dict[Any, Any]) -> None:
    """Refuse arguments too large in total, or holding a string that is not UTF-8 text.

    The walk is iterative (no recursion limit) and counts every value as well as every
    character, so a huge or self-containing structure stops at the limit. Arguments that are
    all ASCII strings, the common shape, pass in one quick look.
    """
    size = 0
    for key, value in args.items():
        if type(key) is not str or type(value) is not str or not (key.isascii()
                                                                  and value.isascii()):
            break
        size += 1 + len(value)
    else:
        if size <= MAX_ACTION_CHARS:
            return
    size = 0
    stack: list[tuple[Any, Any]] = [(value, key) for key, value in args.items()]
    for key in args:
        if isinstance(key, str):
            _text(key, f"an argument name of {name}")
    while stack:
        value, top = stack.pop()
        size += 1
        if isinstance(value, (str, bytes)):
            size += len(value)
            if size <= MAX_ACTION_CHARS:
                _text(value, f"the argument {str(top)[:100]!r} of {name}")
        elif isinstance(value, dict):
            for key, item in value.items():
                if isinstance(key, (str, bytes)):
                    _text(key, f"a key inside the argument {str(top)[:100]!r} of {name}")
                stack.append((item, top))
        elif isinstance(value, (list, tuple)):
            stack.extend((item, top) for item in value)
        if size > MAX_ACTION_CHARS:
            raise _Bad(f"the arguments of {name} hold more than {MAX_ACTION_CHARS:,} characters "
                       f"and values; the limit is {MAX_ACTION_CHARS:,} (send long content in "
                       "several calls)")


def _split(action: Any) -> tuple[Any, Any, str | None]:
    """(tool name, raw arguments, call id) from any accepted action shape."""
    if isinstance(action, (str, bytes)):
        action = _loads(_text(action, "the action"), "the action")
    function = getattr(action, "function", None)
    if function is not None and not isinstance(action, dict):  # OpenAI SDK object
        return getattr(function, "name", None), getattr(function, "arguments", None), getattr(
            action, "id", None)
    if not isinstance(action, dict):
        raise _Bad(f"an action must be an object with 'tool' and 'args', not {type(action).__name__}")
    if isinstance(action.get("function"), dict):  # OpenAI tool_call as a dict
        fn = action["function"]
        return fn.get("name"), fn.get("arguments", {}), action.get("id")
    name = action.get("tool", action.get("name"))
    args = action.get("args", action.get("arguments", {}))
    unknown = set(action) - {"tool", "name", "args", "arguments", "id", "type"}
    if unknown:
        raise _Bad(f"unexpected keys {sorted(unknown)} in the action; use 'tool' and 'args'")
    return name, args, action.get("id")


def parse_action(action: Any, tools: Mapping[str, Tool]) -> ToolCall | ActionError:
    """Validate ``action`` against ``tools``; never raises."""
    try:
        if type(action) is dict and action.keys() == _PLAIN_KEYS:  # the common shape, quickly
            name, args, call_id = action["tool"], action["args"], None
        else:
            name, args, call_id = _split(action)
        if not isinstance(name, str) or not name:
            raise _Bad("the action names no tool: give 'tool' (or an OpenAI function name)")
        tool = tools.get(name)
        if tool is None:
            near = difflib.get_close_matches(name, list(tools), n=1)
            hint = f" Did you mean {near[0]!r}?" if near else ""
            raise _Bad(f"unknown tool {name[:100]!r}.{hint} Available: {', '.join(tools)}")
        if isinstance(args, (str, bytes)):
            text = _text(args, f"the arguments of {name}")
            args = _loads(text, f"the arguments of {name}") if text.strip() else {}
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise _Bad(f"the arguments of {name} must be an object, not {type(args).__name__}")
        _check_values(name, args)
        if isinstance(call_id, str):
            _text(call_id, "the call id")
        try:
            model = tool.args.__pydantic_validator__.validate_python(args)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'args'}: {err['msg']}"
                for err in exc.errors(include_url=False)[:5]
            )
            raise _Bad(f"invalid arguments for {name}: {problems}") from None
        return ToolCall(tool, model, call_id if isinstance(call_id, str) else None)
    except _Bad as bad:
        return ActionError(str(bad))
    except RecursionError:
        return ActionError("the action is nested too deeply")
    except Exception as exc:  # anything else an odd object can raise: report, never crash
        return ActionError(f"could not read the action: {type(exc).__name__}: {exc}"[:500])


class SubmitArgs(ToolArgs):
    pass  # submit takes no arguments


def submit_tool(description: str = "Submit your work for grading; this ends the episode.",
                args: type[BaseModel] = SubmitArgs,
                keep: Callable[[Any], ToolResult | None] | None = None,
                inline: bool = True) -> Tool:
    """A ``submit`` tool that ends the episode (the env grades after it). ``keep(args)`` sees
    the arguments first (the env keeps them for its verifier) and may return the step's result
    instead (one that is not ``done`` goes on). ``inline``: ``keep`` is quick enough for
    ``astep`` and the vector env's loop to run it in place (no thread)."""

    def submitted(given: BaseModel) -> ToolResult:
        result = keep(given) if keep is not None else None
        return result if result is not None else ToolResult("submitted", done=True)

    if not inline:
        return Tool("submit", description, args, submitted)
    return Tool("submit", description, args, submitted, inline_async(submitted),
                inline_plan(submitted))
