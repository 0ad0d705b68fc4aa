"""taskgym steps as MCP tool results, and taskgym tools as MCP tools (mcp 2.x types).

A step's answer (:func:`taskgym.server.protocol.step_payload`, the same data ``taskgym
serve`` sends) becomes a :class:`~mcp_types.CallToolResult`: the observation's text as text
content, each PNG the tool made (``info["images"]``) as image content, ``is_error=True`` when
the step carries an error (a bad tool name or argument, a failed tool, an episode that ended
with no verdict). The step that ends an episode also carries its outcome as structured
content (:func:`outcome`): the verifier's reward, or ``verdict: "none"`` and ``reward: null``
when the environment failed the episode, never a reward of 0 that is not the policy's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from pydantic import ValidationError

from taskgym.core.reward import RewardResult
from taskgym.core.tool import Tool

EPISODE_ID = "episode_id"
"""The argument naming an episode, in every tool of the episode-handle server."""

START_EPISODE = types.Tool(
    name="start_episode",
    description=("Start an episode: a fresh sandbox on a task (the task_id given, else one "
                 "drawn with the seed). Returns the task's instructions and the episode_id "
                 "that every other tool takes. End it with submit (graded) or end_episode."),
    input_schema={"type": "object", "additionalProperties": False, "properties": {
        "task_id": {"type": "string", "description": "a task of the server's task set"},
        "seed": {"type": "integer", "minimum": 0, "description": "seed of the task draw"}}},
)
END_EPISODE = types.Tool(
    name="end_episode",
    description=("End an episode and stop its sandbox without grading it (submit grades). "
                 "An episode also ends when it stays idle past the server's idle timeout."),
    input_schema={"type": "object", "additionalProperties": False, "required": [EPISODE_ID],
                  "properties": {EPISODE_ID: {"type": "string",
                                              "description": "what start_episode returned"}}},
)


def mcp_tool(tool: Tool, *, handle: bool) -> types.Tool:
    """``tool`` as an MCP tool; with ``handle``, its arguments also take the ``episode_id``."""
    schema = dict(tool.json_schema())
    if handle:
        schema["properties"] = {**schema.get("properties", {}), EPISODE_ID: {
            "type": "string", "description": "the episode, as start_episode returned it"}}
        schema["required"] = [EPISODE_ID, *schema.get("required", [])]
    return types.Tool(name=tool.name, description=tool.description, input_schema=schema)


def error_result(message: str, structured: dict[str, Any] | None = None) -> types.CallToolResult:
    """A failed call: ``message`` as text, ``is_error=True``."""
    return types.CallToolResult(content=[types.TextContent(text=message)],
                                structured_content=structured, is_error=True)


def step_result(payload: Mapping[str, Any]) -> types.CallToolResult:
    """One step's answer (``step_payload``) as a tool result."""
    metadata = payload["metadata"]
    content: list[types.ContentBlock] = [types.TextContent(text=str(payload["observation"]["text"]))]
    content += [types.ImageContent(data=image, mime_type="image/png")
                for image in metadata.get("images") or () if isinstance(image, str)]
    return types.CallToolResult(content=content,
                                structured_content=outcome(metadata) if payload["done"] else None,
                                is_error=metadata.get("error") is not None)


def outcome(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """How an episode ended, from its last step's metadata: ``verdict`` (``"graded"`` or
    ``"none"``), ``reward`` (the verifier's score; ``None`` with no verdict), ``success``,
    ``failure`` (the no-verdict class), ``summary`` (:meth:`RewardResult.summary`),
    ``components``, ``terminated`` and ``truncated``."""
    ended = {"done": True, "terminated": bool(metadata.get("terminated")),
             "truncated": bool(metadata.get("truncated"))}
    try:
        graded = RewardResult.model_validate(metadata.get("reward"))
    except ValidationError:  # an end with no RewardResult: say so, invent no reward
        return {**ended, "verdict": "none", "reward": None, "success": False,
                "failure": metadata.get("failure"), "components": {},
                "summary": str(metadata.get("error") or "the episode ended with no result")}
    return {**ended, "verdict": graded.verdict, "reward": graded.score if graded.graded else None,
            "success": graded.success,
            "failure": None if graded.failure is None else str(graded.failure),
            "components": dict(graded.components), "summary": graded.summary()}
