"""An episode as a chat: OpenAI-format messages with tool-call ids, for chat templates.

:class:`ChatHistory` builds the list: ``system`` (optional), ``user`` (the task's
instruction), then per model turn an ``assistant`` message with ``tool_calls`` (``id``,
``type: "function"``, ``function: {name, arguments}`` with the arguments as a JSON string,
as OpenAI-compatible servers take them) and one ``tool`` message per call (``tool_call_id``,
``content``: the observation's text, or content blocks, text then ``image_url`` parts with
base64 PNG ``data:`` URLs, for a tool that returned images, when images are asked for).

:class:`ChatMessages` is the Gymnasium wrapper that keeps one for an env stepped in the
trainer's own process and hands it out as ``info["messages"]`` at every ``reset`` and
``step``. It is opt-in (wrap the env) and lives here rather than in the core, so the core's
step does no extra work for callers that do not read it: the wrapper appends two dicts per
step and hands out the same list, never a copy.

:func:`template_messages` is the list as Hugging Face chat templates read it (arguments as
objects: several templates write ``arguments | tojson``, which would quote a JSON string).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym

from taskgym.core.env_step import describe

__all__ = ["AFTER_END", "ChatHistory", "ChatMessages", "openai_tool_call", "template_messages"]

AFTER_END = "not run: the episode is over"
"""The ``tool`` message answering a call made after the episode ended (a second call of the
reply whose first one submitted, say)."""


def openai_tool_call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    """One entry of an assistant message's ``tool_calls``: ``arguments`` (an object, or the
    model's own text of them) as the JSON string OpenAI's format carries."""
    if isinstance(arguments, str):
        text = arguments
    else:
        try:
            text = json.dumps(arguments, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):  # an odd object: as the transcript
            text = describe(arguments)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": text}}


class ChatHistory:
    """The messages of one episode, appended as it runs (see the module's docstring)."""

    def __init__(self, instruction: str, system_prompt: str | None = None,
                 images: bool = False) -> None:
        self.images = images
        self.messages: list[dict[str, Any]] = []
        if system_prompt:
            self.messages.append({"role": "system", "content": system_prompt})
        self.messages.append({"role": "user", "content": instruction})

    def assistant(self, content: str | None, tool_calls: Sequence[Mapping[str, Any]] = ()
                  ) -> None:
        """The model's turn: its text (``None`` for none) and its calls, in OpenAI format."""
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if tool_calls:
            message["tool_calls"] = [dict(call) for call in tool_calls]
        self.messages.append(message)

    def tool(self, call_id: str, text: str, images: Iterable[bytes] = ()) -> None:
        """The result of call ``call_id``: text, or with images (when this history keeps
        them) text and ``image_url`` blocks."""
        pngs = list(images) if self.images else []
        content: str | list[dict[str, Any]] = text
        if pngs:
            content = [{"type": "text", "text": text}] + [image_block(png) for png in pngs]
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})

    def user(self, text: str) -> None:
        """A note to the model that answers no call (what it wrote that could not be read)."""
        self.messages.append({"role": "user", "content": text})


def image_block(png: bytes) -> dict[str, Any]:
    """A PNG as an OpenAI ``image_url`` content block (a base64 ``data:`` URL)."""
    url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    return {"type": "image_url", "image_url": {"url": url}}


def template_messages(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as chat templates read them: each call's arguments an object (text that
    is not a JSON object stays text), and ``""`` for a content of ``None`` (vision templates
    iterate over the content). Copies; the input is left as it is."""
    out: list[dict[str, Any]] = []
    for message in messages:
        copied = dict(message)
        if copied.get("content") is None:
            copied["content"] = ""
        if copied.get("tool_calls"):
            copied["tool_calls"] = [_with_object_arguments(call) for call in copied["tool_calls"]]
        out.append(copied)
    return out


def _with_object_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    function = dict(call.get("function") or {})
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            function["arguments"] = parsed
    return {**call, "function": function}


class ChatMessages(gym.Wrapper[Any, Any, Any, Any]):
    """``info["messages"]`` at every ``reset`` and ``step`` of a taskgym env (see the
    module's docstring): the episode so far as OpenAI-format chat messages.

    Each step is one assistant message with one call: the action's ``id`` when it has one
    (the ids of :func:`~taskgym.integrations.parse_tool_calls`, or an OpenAI tool call's),
    else ``call_<step>``; its name and arguments as the action gave them. A step after the
    end is recorded with :data:`AFTER_END` (the env answers it with an error observation).
    ``images=True`` keeps the PNGs a tool returned as content blocks. ``areset`` and
    ``astep`` (the env's asyncio API) record alike.
    """

    def __init__(self, env: gym.Env[Any, Any], system_prompt: str | None = None,
                 images: bool = False) -> None:
        super().__init__(env)
        self.system_prompt = system_prompt
        self.images = images
        self.history = ChatHistory("", system_prompt, images)
        self._over = True
        self._calls = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[Any, dict[str, Any]]:
        return self._started(*self.env.reset(seed=seed, options=options))

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        call_id = self._called(action)
        return self._answered(call_id, *self.env.step(action))

    async def areset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
                     ) -> tuple[Any, dict[str, Any]]:
        """:meth:`reset` for asyncio (the env's ``areset``)."""
        return self._started(*await self.env.get_wrapper_attr("areset")(seed=seed,
                                                                        options=options))

    async def astep(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        """:meth:`step` for asyncio (the env's ``astep``)."""
        call_id = self._called(action)
        return self._answered(call_id, *await self.env.get_wrapper_attr("astep")(action))

    def _started(self, obs: Any, info: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        self.history = ChatHistory(obs["text"], self.system_prompt, self.images)
        self._over = False
        self._calls = 0
        info["messages"] = self.history.messages
        return obs, info

    def _called(self, action: Any) -> str:
        call_id, name, arguments = _call_parts(action, f"call_{self._calls}")
        self._calls += 1
        self.history.assistant(None, [openai_tool_call(call_id, name, arguments)])
        return call_id

    def _answered(self, call_id: str, obs: Any, reward: Any, terminated: bool, truncated: bool,
                  info: dict[str, Any]) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        if self._over:
            self.history.tool(call_id, AFTER_END)
        else:
            self.history.tool(call_id, obs["text"], info.get("images", ()))
            self._over = terminated or truncated
        info["messages"] = self.history.messages
        return obs, reward, terminated, truncated, info


def _call_parts(action: Any, default_id: str) -> tuple[str, str, Any]:
    """(id, name, arguments) of any action shape ``env.step`` takes, as far as they can be
    read; what cannot is recorded as the model sent it (the env reports the error)."""
    if isinstance(action, Mapping):
        function = action.get("function")
        if isinstance(function, Mapping):
            name, arguments = function.get("name"), function.get("arguments", {})
        else:
            name = action.get("tool", action.get("name"))
            arguments = action.get("args", action.get("arguments", {}))
        call_id = action.get("id")
        return (call_id if isinstance(call_id, str) and call_id else default_id,
                name if isinstance(name, str) else str(name), arguments)
    return default_id, "", action if isinstance(action, str) else describe(action)
