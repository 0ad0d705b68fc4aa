"""One Python class per env id whose functions are exactly the env's tools.

Trainers that run an env in their own process find its tools by looking at a class: TRL's
``environment_factory`` lists ``inspect.getmembers(type(obj), inspect.isfunction)`` (less
``reset``, ``get_reward`` and ``_`` names) and builds each tool's JSON schema with
``transformers.utils.get_json_schema`` from the function's type hints and Google-style
docstring. :func:`tool_class` generates that class from an env's tools: one keyword-only
method per tool, typed and documented from the tool's JSON schema, each forwarding its call
to the env the object holds (``env.step({"tool": name, "args": kwargs})``) and returning the
observation's text. Nothing else public is defined on the class, so a trainer sees the tools
and only them.

A Python signature says less than a JSON schema. Kept: argument names and order, the types
``string``/``integer``/``number``/``boolean``/``null``, arrays (``items``, ``prefixItems`` as a
tuple), objects with ``additionalProperties`` (``dict[str, T]``), ``anyOf``/``oneOf`` and
type lists (unions), ``enum``/``const`` (``Literal``, and ``(choices: [...])`` at the end of
the argument's docstring line), which arguments are required, descriptions, and defaults (in
the signature only; ``get_json_schema`` does not emit them). Lost (:data:`LOST_KEYWORDS`):
bounds (``minimum``, ``maximum``, the exclusive ones, ``multipleOf``), lengths
(``minLength``, ``maxLength``, ``minItems``, ``maxItems``, ``uniqueItems``), ``pattern`` and
``format``, nested objects' ``properties``/``required`` (a nested object is ``dict[str,
Any]``), ``additionalProperties: false``, ``examples``, ``title`` and the parameters'
own ``description``. Also changed: an argument with no description gets
:data:`NO_DESCRIPTION`, line breaks in argument descriptions become spaces, and the words
``Args:``, ``Returns:`` and ``Raises:`` inside a description get a space before the colon
(transformers would read them as docstring sections). The env still validates every call
against the full schema, so a call the signature admits but the schema refuses is an error
observation, never a crash.
"""

from __future__ import annotations

import functools
import inspect
import json
import keyword
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, Union

import gymnasium as gym

from taskgym.core.registry import NAMESPACE, load_plugins, make
from taskgym.core.tool import Tool
from taskgym.errors import ConfigError, UnknownEnvError

__all__ = ["EnvTools", "LOST_KEYWORDS", "NO_DESCRIPTION", "RESERVED_NAMES", "env_of", "env_tools",
           "tool_class", "tool_method"]

RESERVED_NAMES = frozenset({"reset", "get_reward"})
"""Names a trainer gives a meaning of its own (TRL): a tool may not be called so."""
NO_DESCRIPTION = "(no description)"
"""The docstring line of an argument whose schema has no description (transformers needs one)."""
LOST_KEYWORDS = frozenset({
    "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
    "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "pattern", "format",
    "properties", "required", "additionalProperties", "default", "examples", "title",
    "description",
})
"""JSON-schema keywords below an argument's type (and the parameters object's own
``description`` and ``additionalProperties``) that the generated signature does not carry
into ``get_json_schema``; ``default`` is in the signature but not in that schema."""
_SECTION_WORDS = re.compile(r"(Args|Returns|Raises):")
_MAX_DEPTH = 32


class EnvTools:
    """The base of every class :func:`tool_class` makes: it holds one env and forwards each
    tool call to it. It defines no public name, so that the generated class's public
    functions are exactly the env's tools."""

    _env_id: ClassVar[str | None] = None
    _make_kwargs: ClassVar[Mapping[str, Any]] = {}
    _tool_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, env: gym.Env[Any, Any] | None = None) -> None:
        """Hold ``env``, or make one of the class's env id (nothing starts until ``reset``)."""
        if env is None:
            if self._env_id is None:
                raise ConfigError(f"{type(self).__name__} was made from an env, not an env id: "
                                  "pass the env to hold")
            env = make(self._env_id, **self._make_kwargs)
        names = tuple(t.name for t in env_tools(env))
        if sorted(names) != sorted(self._tool_names):
            raise ConfigError(f"{type(self).__name__} has the tools {list(self._tool_names)}, but "
                              f"this env has {list(names)}: make the class from this env")
        self._env = env

    def _call_tool(self, name: str, args: dict[str, Any]) -> str:
        """Run one tool call on the held env: its observation's text (an error observation
        when the arguments are wrong; the env never raises for what the agent sends)."""
        observation, _reward, _terminated, _truncated, _info = self._env.step(
            {"tool": name, "args": args})
        return str(observation["text"])


def env_of(tools: EnvTools) -> gym.Env[Any, Any]:
    """The env a tool object forwards its calls to (to reset, read or close it)."""
    return tools._env


def tool_class(env: str | gym.Env[Any, Any], /, *, class_name: str | None = None,
               **make_kwargs: Any) -> type[EnvTools]:
    """A class whose public functions are exactly the tools of ``env`` (an env id, or a made
    env), each a keyword-only method typed and documented from the tool's JSON schema.

    An instance holds an env: ``cls()`` makes one of the id with ``make_kwargs`` (a class
    made from a made env has no id to make: pass it an env); ``cls(env)`` holds the given
    one, which must have the same tools. Each method runs its tool on
    that env and returns the observation's text. ``class_name`` defaults to the id in
    CamelCase (``coding-terminal-v0`` gives ``CodingTerminalV0``). A tool whose name is not a
    Python identifier, is a keyword, starts with ``_`` or is ``reset``/``get_reward``, or an
    argument whose name cannot be a Python parameter, raises :class:`ConfigError`.
    """
    env_id = env if isinstance(env, str) else None
    if env_id is None and make_kwargs:
        raise ConfigError("make_kwargs are for an env id; this env is made already")
    spec = getattr(env, "spec", None)
    shown = env_id or (spec.id if spec is not None else type(getattr(env, "unwrapped", env)).__name__)
    specs = [tool.openai()["function"] for tool in env_tools(env)]
    name = class_name or _camel(shown)
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ConfigError(f"class name {name!r} is not a Python identifier; pass class_name=")
    namespace: dict[str, Any] = {"__module__": __name__, "__qualname__": name,
                                 "__doc__": f"The tools of {shown}, run on the env an instance "
                                            "holds.",
                                 "_env_id": env_id, "_make_kwargs": dict(make_kwargs),
                                 "_tool_names": tuple(s["name"] for s in specs)}
    for spec in specs:
        method = tool_method(spec)
        method.__qualname__ = f"{name}.{method.__name__}"
        namespace[method.__name__] = method
    return type(name, (EnvTools,), namespace)


def env_tools(env: str | gym.Env[Any, Any]) -> list[Tool]:
    """The tools of ``env``: a made env's, or those of an env id's class, read without making
    an env (the class's ``make_tools`` on an instance that is not initialised, so no
    requirement is checked and no task set is read; every taskgym domain builds its tools
    so). A class whose ``make_tools`` needs its instance's state is made instead (which
    starts nothing until ``reset``)."""
    from taskgym.core.env import TaskEnv

    if not isinstance(env, str):
        unwrapped = getattr(env, "unwrapped", env)
        tools = getattr(unwrapped, "tools", None)
        if not isinstance(tools, list) or not all(isinstance(t, Tool) for t in tools):
            raise ConfigError(f"{type(unwrapped).__name__} is not a taskgym env (no tools)")
        return list(tools)
    load_plugins()
    env_id = env.removeprefix(f"{NAMESPACE}/")
    spec = gym.registry.get(f"{NAMESPACE}/{env_id}")
    if spec is None:
        known = sorted(i.split("/", 1)[1] for i in gym.registry if i.startswith(f"{NAMESPACE}/"))
        raise UnknownEnvError(f"no taskgym env {env!r}; registered: {', '.join(known)}")
    creator: Any = gym.envs.registration.load_env_creator(spec.entry_point)  # type: ignore[arg-type]
    if isinstance(creator, type) and issubclass(creator, TaskEnv):
        try:
            return list(creator.make_tools(creator.__new__(creator)))
        except AttributeError:  # make_tools reads what __init__ sets: make the env after all
            pass
    made = make(env_id)
    try:
        return env_tools(made)
    finally:
        made.close()


def tool_method(spec: Mapping[str, Any]) -> Any:
    """A method for one tool, from its OpenAI function spec (``name``, ``description``,
    ``parameters``): keyword-only arguments typed from the schema, a Google-style docstring,
    ``-> str``; calling it runs ``self._call_tool(name, kwargs)``."""
    name = spec.get("name")
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ConfigError(f"tool name {name!r} is not a Python identifier, so it cannot be a "
                          "method; rename the tool")
    if name.startswith("_") or name in RESERVED_NAMES:
        raise ConfigError(f"tool name {name!r} clashes with what trainers reserve (reset, "
                          "get_reward and names starting with '_'); rename the tool")
    parameters = spec.get("parameters") or {}
    properties: Mapping[str, Any] = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    defs = {**parameters.get("definitions", {}), **parameters.get("$defs", {})}
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)]
    annotations: dict[str, Any] = {}
    lines = []
    for arg, schema in properties.items():
        if not arg.isidentifier() or keyword.iskeyword(arg) or arg == "self":
            raise ConfigError(f"argument {arg!r} of tool {name!r} cannot be a Python parameter "
                              "name; rename it")
        hint = python_type(schema, defs)
        annotations[arg] = hint
        if arg in required:
            default: Any = inspect.Parameter.empty
        elif isinstance(schema, Mapping) and "default" in schema:
            default = schema["default"]
        else:
            default = None
        params.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default,
                                        annotation=hint))
        lines.append(f"    {arg}: {_arg_doc(schema, defs)}")
    annotations["return"] = str
    description = _docstring_safe(str(spec.get("description") or name))
    doc = description + ("\n\nArgs:\n" + "\n".join(lines) if lines else "")
    doc += "\n\nReturns:\n    The observation's text."

    def method(self: EnvTools, /, *args: Any, **kwargs: Any) -> str:
        if args:
            raise TypeError(f"{name}() takes keyword arguments only")
        return self._call_tool(name, kwargs)

    method.__name__ = name
    method.__qualname__ = name
    method.__doc__ = doc
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    return method


def python_type(schema: Any, defs: Mapping[str, Any], depth: int = 0) -> Any:
    """The Python type hint of a JSON schema (``Any`` for what has no hint)."""
    schema = _resolve(schema, defs)
    if depth > _MAX_DEPTH or not isinstance(schema, Mapping):
        return Any
    if "enum" in schema or "const" in schema:
        values = list(schema["enum"]) if "enum" in schema else [schema["const"]]
        if values and all(v is None or type(v) in (str, int, float, bool) for v in values):
            return Literal[tuple(values)]
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alternatives, list) and alternatives:
        return _union([python_type(s, defs, depth + 1) for s in alternatives])
    if isinstance(schema.get("allOf"), list) and len(schema["allOf"]) == 1:
        return python_type(schema["allOf"][0], defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([python_type({**schema, "type": k}, defs, depth + 1) for k in kind])
    scalar = {"string": str, "integer": int, "number": float, "boolean": bool,
              "null": type(None)}.get(kind)  # type: ignore[arg-type]
    if scalar is not None:
        return scalar
    if kind == "array":
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and len(prefix) > 1:
            return tuple[tuple(python_type(s, defs, depth + 1) for s in prefix)]  # type: ignore[misc]
        items = prefix[0] if isinstance(prefix, list) and prefix else schema.get("items")
        return list if items in (None, {}, True) else list[python_type(items, defs, depth + 1)]  # type: ignore[misc]
    if kind == "object":
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping) and extra:
            return dict[str, python_type(extra, defs, depth + 1)]  # type: ignore[misc]
        return dict
    return Any


def _resolve(schema: Any, defs: Mapping[str, Any]) -> Any:
    """``schema`` with a local ``$ref`` (``#/$defs/X``, ``#/definitions/X``) followed; its own
    keys (a description beside the ``$ref``) win."""
    for _ in range(_MAX_DEPTH):
        ref = schema.get("$ref") if isinstance(schema, Mapping) else None
        if not isinstance(ref, str):
            return schema
        target = defs.get(ref.rsplit("/", 1)[-1])
        if not isinstance(target, Mapping):
            return {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return {}


def _union(hints: Sequence[Any]) -> Any:
    unique = list(dict.fromkeys(hints))
    return unique[0] if len(unique) == 1 else Union[tuple(unique)]  # noqa: UP007


def _arg_doc(schema: Any, defs: Mapping[str, Any]) -> str:
    """An argument's docstring line: its description on one line, then ``(choices: [...])``
    when the schema is an enum (at the end, where transformers reads it)."""
    schema = _resolve(schema, defs)
    schema = schema if isinstance(schema, Mapping) else {}
    text = " ".join(str(schema.get("description") or "").split()) or NO_DESCRIPTION
    text = _docstring_safe(text)
    choices = _choices(schema, defs)
    if choices is not None:
        text += f" (choices: {json.dumps(choices, ensure_ascii=False)})"
    return text


def _choices(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> list[Any] | None:
    """The enum values of ``schema``, also under ``anyOf`` beside ``null``."""
    if "enum" in schema:
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    for alternatives in (schema.get("anyOf"), schema.get("oneOf")):
        if isinstance(alternatives, list):
            values = [_choices(_resolve(s, defs), defs) if isinstance(s, Mapping) else None
                      for s in alternatives]
            enums = [v for v in values if v is not None]
            if len(enums) == 1:
                return enums[0]
    return None


def _docstring_safe(text: str) -> str:
    """``text`` with no word transformers would read as a docstring section."""
    return _SECTION_WORDS.sub(r"\1 :", text)


@functools.cache
def _camel(env_id: str) -> str:
    """``coding-terminal-v0`` -> ``CodingTerminalV0``."""
    words = re.split(r"[^0-9A-Za-z]+", env_id.removeprefix(f"{NAMESPACE}/"))
    name = "".join(w[:1].upper() + w[1:] for w in words if w)
    return name if name[:1].isalpha() else f"Env{name}"
