"""OpenEnv's wire format, for taskgym envs: actions in, observations and schemas out.

The messages are OpenEnv 0.10's (``openenv.core.env_server``): a step's answer is
``{"observation": {...}, "reward": r, "done": d, "metadata": {...}}``. What taskgym adds:
``observation.text`` is the env's text observation, ``metadata`` is the step's ``info`` made
JSON-safe (``info["reward"]``, the :class:`~taskgym.RewardResult`, as a mapping; its
``verdict`` and ``failure`` copied to ``metadata["verdict"]`` / ``["failure"]``), and
``terminated`` / ``truncated`` (OpenEnv's ``done`` is either). Nothing here does I/O.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from taskgym.core.tool import Tool


class ErrorCode(StrEnum):
    """OpenEnv's WebSocket error codes (``WSErrorCode``)."""

    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_TYPE = "UNKNOWN_TYPE"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    EXECUTION_ERROR = "EXECUTION_ERROR"
    CAPACITY_REACHED = "CAPACITY_REACHED"
    FACTORY_ERROR = "FACTORY_ERROR"
    SESSION_ERROR = "SESSION_ERROR"


RESET_KEYS = ("seed", "task_id", "options", "episode_id")
"""What a ``reset`` message's ``data`` may hold: ``seed`` and ``options`` are the env's own
(``options={"task_id": ...}``), ``task_id`` is short for that option, ``episode_id`` is
OpenEnv's and is echoed in the session's state."""


def error_frame(code: ErrorCode, message: str, **extra: Any) -> dict[str, Any]:
    """An OpenEnv error message (``{"type": "error", "data": {message, code, ...}}``)."""
    return {"type": "error", "data": {"message": message, "code": code.value, **extra}}


def jsonable(value: Any) -> Any:
    """``value`` as JSON-safe data: pydantic models dumped, bytes as base64, anything else
    unknown as its ``repr``."""
    return to_jsonable_python(value, fallback=repr, bytes_mode="base64")


def step_payload(obs: dict[str, Any], reward: float | None, terminated: bool, truncated: bool,
                 info: dict[str, Any]) -> dict[str, Any]:
    """A taskgym step (or reset, with ``reward=None``) as OpenEnv's observation data."""
    metadata: dict[str, Any] = jsonable(info)
    graded = info.get("reward")
    if isinstance(graded, BaseModel):
        metadata.setdefault("verdict", getattr(graded, "verdict", None))
        metadata.setdefault("failure", getattr(graded, "failure", None))
    metadata["terminated"], metadata["truncated"] = terminated, truncated
    return {"observation": {**jsonable(obs), "metadata": metadata}, "reward": reward,
            "done": terminated or truncated, "metadata": metadata}


def list_tools_payload(tools: list[Tool]) -> dict[str, Any]:
    """The answer to OpenEnv's ``list_tools`` action (a ``ListToolsObservation``)."""
    specs = [mcp_tool(tool) for tool in tools]
    return {"observation": {"tools": specs, "metadata": {}}, "reward": None, "done": False}


def mcp_tool(tool: Tool) -> dict[str, Any]:
    """A tool as OpenEnv's ``Tool`` (name, description, input_schema)."""
    return {"name": tool.name, "description": tool.description, "input_schema": tool.json_schema()}


def native_action(data: dict[str, Any]) -> dict[str, Any]:
    """OpenEnv's ``call_tool`` action as taskgym's ``{"tool", "args"}``; anything else as sent
    (the env turns a bad action into an error observation)."""
    if data.get("type") == "call_tool":
        return {"tool": data.get("tool_name"), "args": data.get("arguments", {})}
    return data


def call_tool_fields(data: dict[str, Any], payload: dict[str, Any]) -> None:
    """Add a ``CallToolObservation``'s fields (``tool_name``, ``result``, ``error``) to the
    observation of a step that answered a ``call_tool`` action."""
    observation, metadata = payload["observation"], payload["metadata"]
    observation["tool_name"] = data.get("tool_name")
    observation["result"] = observation.get("text")
    error = metadata.get("error")
    observation["error"] = None if error is None else {"error_type": "execution_error",
                                                        "message": str(error)}


def schemas(tools: list[Tool]) -> dict[str, Any]:
    """``/schema``: JSON schemas of the actions, observations and state."""
    native = [{"type": "object", "title": f"tool {tool.name}", "additionalProperties": False,
               "required": ["tool", "args"],
               "properties": {"tool": {"const": tool.name}, "args": tool.json_schema()}}
              for tool in tools]
    call_tool = {"type": "object", "title": "call_tool", "required": ["type", "tool_name"],
                 "properties": {"type": {"const": "call_tool"},
                                "tool_name": {"enum": [tool.name for tool in tools]},
                                "arguments": {"type": "object"}}}
    list_tools = {"type": "object", "title": "list_tools", "required": ["type"],
                  "properties": {"type": {"const": "list_tools"}}}
    observation = {"type": "object", "title": "observation",
                   "properties": {"text": {"type": "string"}, "metadata": {"type": "object"},
                                  "done": {"type": "boolean"},
                                  "reward": {"type": ["number", "null"]}}}
    state = {"type": "object", "title": "state",
             "properties": {"episode_id": {"type": ["string", "null"]},
                            "step_count": {"type": "integer", "minimum": 0},
                            "task_id": {"type": ["string", "null"]},
                            "done": {"type": "boolean"}}}
    return {"action": {"anyOf": [*native, call_tool, list_tools]}, "observation": observation,
            "state": state}
