"""An agent backed by any OpenAI-compatible chat-completions server (vLLM, SGLang, Ollama, OpenAI)."""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.request
from typing import Any

from taskgym.agents.base import SUBMIT, Agent
from taskgym.errors import ConfigError

__all__ = ["OpenAIChatAgent"]

SYSTEM_PROMPT = (
    "You are an expert engineer working in a sandboxed Linux workspace. Use the tools to "
    "inspect, change and test your work. Call exactly one tool per turn. When the task is "
    "done, call submit."
)


class OpenAIChatAgent(Agent):
    """Talks to ``{base_url}/chat/completions`` with the env's tools; one tool call per step.

    Args:
        base_url: e.g. ``http://127.0.0.1:8000/v1``; default ``$OPENAI_BASE_URL``.
        model: model name as the server knows it; default ``$OPENAI_MODEL``.
        api_key: default ``$OPENAI_API_KEY`` (may be empty for local servers).
        images: send the PNGs a tool returned (``info["images"]``: a CAD render, a PDF page)
            to the model, as image parts of a user message after the tool's result; only for
            servers whose model takes images (a text-only model rejects them). Off by default.
    """

    name = "openai"

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, temperature: float = 0.0, max_tokens: int = 2048,
                 timeout: float = 300.0, images: bool = False) -> None:
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or "").rstrip("/")
        self.model = model or os.environ.get("OPENAI_MODEL") or ""
        if not self.base_url or not self.model:
            raise ConfigError("the openai agent needs base_url and model (or OPENAI_BASE_URL "
                              "and OPENAI_MODEL), e.g. --base-url http://127.0.0.1:8000/v1")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.images = images
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self._pending_call: str | None = None

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> Any:
        if info.get("step") == 0:
            self.tools = info.get("tools", [])
            self.messages = [{"role": "system", "content": SYSTEM_PROMPT},
                             {"role": "user", "content": observation["text"]}]
        elif self._pending_call is not None:
            self.messages.append({"role": "tool", "tool_call_id": self._pending_call,
                                  "content": observation["text"]})
            if self.images and info.get("images"):  # a tool message may hold text only
                self.messages.append({"role": "user", "content": _image_parts(info["images"])})
        self._pending_call = None
        for _attempt in range(3):
            message = self._complete()
            self.messages.append(message)
            calls = message.get("tool_calls") or []
            if calls:
                call = calls[0]
                self._pending_call = call.get("id") or "call_0"
                # answer the calls we will not run, so the transcript stays valid
                for extra in calls[1:]:
                    self.messages.append({"role": "tool", "tool_call_id": extra.get("id"),
                                          "content": "not run: one tool call per turn"})
                return call
            self.messages.append({"role": "user",
                                  "content": "Call one of the tools (or submit when done)."})
        return SUBMIT

    def _complete(self) -> dict[str, Any]:
        body = {"model": self.model, "messages": self.messages, "tools": self.tools,
                "temperature": self.temperature, "max_tokens": self.max_tokens}
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json",
                     **({"Authorization": f"Bearer {self.api_key}"} if self.api_key else {})})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                payload = json.load(response)
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise ConfigError(f"the model server at {self.base_url} did not answer: {exc}") from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"the model server at {self.base_url} sent a reply that is not "
                              f"JSON: {exc}") from exc
        try:
            message: dict[str, Any] = payload["choices"][0]["message"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ConfigError(f"unexpected reply from {self.base_url}: {str(payload)[:300]}") from exc
        message.setdefault("content", None)
        return {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}


def _image_parts(images: list[bytes]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "text": "The images the tool returned:"}]
    for png in images:
        url = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts
