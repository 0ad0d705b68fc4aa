"""One episode of a model behind an OpenAI-compatible endpoint: :func:`run_episode`.

What trainers that own an agent program and an endpoint (AReaL, ART, Agent Lightning, rLLM
AgentFlow, miles, verifiers harnesses) call per rollout: ``await run_episode(env_id,
task=..., base_url=..., model=...)`` makes the env, asks ``{base_url}/chat/completions``
for a reply per turn with the env's tools as ``tools=``, steps the env with every call of
the reply, and returns an :class:`EpisodeResult`: the verifier's reward and components, the
verdict, and the chat (:mod:`~taskgym.integrations.chat_history`).

Calls come from the reply's ``tool_calls``, else from its text
(:func:`~taskgym.integrations.parse_tool_calls`, ``style``). Nothing the model sends raises:
a call with bad arguments or an unknown tool is the env's error observation; a call in the
text that cannot be read is answered with a user message saying what is wrong; calls of a
reply after the one that ended the episode are answered with
:data:`~taskgym.integrations.chat_history.AFTER_END`.

How an episode ends (``EpisodeResult.ended``): ``submitted`` (a tool ended it),
``truncated`` (the env's step or time budget), ``no_tool_call`` (a reply without a call),
``max_turns`` (``max_turns`` replies), ``refused`` (the endpoint answered 400: the
conversation is too long for it, say), ``environment_failed`` (a step ended it with no
verdict). Every end but ``submitted`` and ``environment_failed`` is *unsubmitted*: taskgym
then submits for the model, so the verifier grades what the policy left, exactly as the env
grades a truncated episode; ``unsubmitted="zero"`` gives such an episode reward 0.0 instead
(the verifier still runs: its verdict says whether the environment worked). An episode with
``verdict == "none"`` (the environment failed, not the policy) is for the trainer to drop.

Raises only for what the caller got wrong: an unknown env or task, a bad argument, an
endpoint that cannot be reached (after :data:`TRANSPORT_ATTEMPTS` tries) or that answers
with an error status other than 400 or with a reply that is not a chat completion
(:class:`~taskgym.errors.ConfigError`). The env is closed whatever happens.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from taskgym.core.registry import make
from taskgym.core.reward import RewardResult
from taskgym.errors import ConfigError, needs_extra
from taskgym.integrations.chat_history import AFTER_END, ChatHistory, openai_tool_call
from taskgym.integrations.tool_calls import ToolCallStyle, parse_tool_calls

if TYPE_CHECKING:
    import httpx

__all__ = ["SYSTEM_PROMPT", "Ended", "EpisodeResult", "run_episode"]

SYSTEM_PROMPT = (
    "You are an expert engineer working in a sandboxed Linux workspace. Use the tools to "
    "inspect, change and test your work. When the task is done, call submit."
)
SUBMIT: dict[str, Any] = {"tool": "submit", "args": {}}
TRANSPORT_ATTEMPTS = 3
"""Tries of a request whose connection failed (a kept-alive connection the server closed
while the env graded, say) before :func:`run_episode` gives up with a ConfigError."""
Ended = Literal["submitted", "truncated", "no_tool_call", "max_turns", "refused",
                "environment_failed"]


@dataclass
class EpisodeResult:
    """What :func:`run_episode` returns."""

    reward: float
    """The verifier's score (0.0 for an unsubmitted episode under ``unsubmitted="zero"``,
    and for no verdict)."""
    components: dict[str, float]
    verdict: str
    """``"graded"``, or ``"none"`` when the environment failed: drop the episode."""
    failure: str | None
    """The no-verdict class (``info["failure"]``) when ``verdict == "none"``."""
    ended: Ended
    steps: int
    """``env.step`` calls the model's calls made (the submit taskgym made for it not
    included)."""
    turns: int
    """Replies of the model."""
    task_id: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    reason: str | None = None
    """The verifier's reason, or why the reward is 0.0 by the unsubmitted policy."""

    @property
    def graded(self) -> bool:
        return self.verdict == "graded"


async def run_episode(env_id: str, *, base_url: str, model: str, task: str | None = None,
                      seed: int | None = None, api_key: str | None = None,
                      system_prompt: str | None = SYSTEM_PROMPT,
                      style: ToolCallStyle = "auto", images: bool = False,
                      unsubmitted: Literal["grade", "zero"] = "grade",
                      max_turns: int | None = None, sampling: Mapping[str, Any] | None = None,
                      timeout: float = 300.0, http_client: httpx.AsyncClient | None = None,
                      make_kwargs: Mapping[str, Any] | None = None) -> EpisodeResult:
    """Play one episode of ``env_id`` (task ``task``, else the one ``seed`` picks) with the
    model ``model`` at ``base_url`` (``.../v1``), on the running event loop; see the
    module's docstring for the ends and the policy.

    ``sampling`` is merged into each request's body (``temperature``, ``max_tokens``, any
    field the server takes). ``images=True`` sends the PNGs a tool returned as content
    blocks of its ``tool`` message (for a model that takes images). ``max_turns`` caps the
    replies (default: the task's step budget). ``http_client`` is shared across episodes
    (its connection pool) when given, else one is opened per episode. ``make_kwargs`` go
    to :func:`taskgym.make`.
    """
    if not base_url or not model:
        raise ConfigError("run_episode needs base_url (e.g. http://127.0.0.1:8000/v1) and model")
    if unsubmitted not in ("grade", "zero"):
        raise ConfigError(f"unsubmitted={unsubmitted!r}: give 'grade' or 'zero'")
    if max_turns is not None and max_turns < 1:
        raise ConfigError(f"max_turns={max_turns}: give at least 1")
    if task is not None and seed is not None:
        raise ConfigError("give task or seed, not both")
    httpx = _import_httpx()
    env = make(env_id, **dict(make_kwargs or {}))
    client = http_client or httpx.AsyncClient(timeout=timeout)
    try:
        obs, info = await env.get_wrapper_attr("areset")(
            seed=seed, options={"task_id": task} if task is not None else None)
        endpoint = _Endpoint(client, base_url.rstrip("/"), model, api_key,
                             {**dict(sampling or {}), "tools": info["tools"]}, timeout)
        episode = _Episode(env, info, ChatHistory(obs["text"], system_prompt, images), style)
        turns_left = max_turns or env.get_wrapper_attr("episode_limits").max_steps
        ended = await episode.play(endpoint, turns_left)
        return episode.result(ended, unsubmitted)
    finally:
        try:
            await env.get_wrapper_attr("aclose")()
        finally:
            if http_client is None:
                await client.aclose()


def _import_httpx() -> Any:
    with needs_extra("run_episode (the endpoint's client)", "endpoint"):
        import httpx
    return httpx


class _Refused(Exception):
    """The endpoint answered 400: the conversation is not one it takes (too long, say)."""


@dataclass
class _Endpoint:
    client: httpx.AsyncClient
    base_url: str
    model: str
    api_key: str | None
    body: dict[str, Any]
    timeout: float

    async def reply(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The model's next message; raises :class:`_Refused` on a 400 and ConfigError for
        what the caller must fix."""
        import httpx

        url = f"{self.base_url}/chat/completions"
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        body = {**self.body, "model": self.model, "messages": messages}
        for attempt in range(1, TRANSPORT_ATTEMPTS + 1):
            try:
                response = await self.client.post(url, json=body, headers=headers,
                                                  timeout=self.timeout)
                break
            except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError,
                    httpx.ConnectError) as exc:  # a kept-alive connection the server closed
                if attempt == TRANSPORT_ATTEMPTS:
                    raise ConfigError(f"the model server at {self.base_url} did not answer "
                                      f"({attempt} tries): {type(exc).__name__}: {exc}") from exc
                await asyncio.sleep(0.2 * attempt)
            except httpx.HTTPError as exc:
                raise ConfigError(f"the model server at {self.base_url} did not answer: "
                                  f"{type(exc).__name__}: {exc}") from exc
        if response.status_code == 400:
            raise _Refused(response.text[:500])
        if response.status_code != 200:
            raise ConfigError(f"the model server at {url} answered {response.status_code}: "
                              f"{response.text[:300]}")
        try:
            message = response.json()["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise ConfigError(f"the model server at {url} sent no chat completion: "
                              f"{response.text[:300]}") from exc
        if not isinstance(message, dict):
            raise ConfigError(f"the model server at {url} sent no chat message: {message!r:.300}")
        return message


class _Episode:
    """The state of one episode while it plays."""

    def __init__(self, env: Any, info: dict[str, Any], history: ChatHistory,
                 style: ToolCallStyle) -> None:
        self.env, self.history, self.style = env, history, style
        self.tools = info["tools"]
        self.task_id: str = info["task_id"]
        self.steps = self.turns = 0
        self.last_info: dict[str, Any] = info
        self.over = False

    async def play(self, endpoint: _Endpoint, turns_left: int) -> Ended:
        while turns_left > 0:
            try:
                message = await endpoint.reply(self.history.messages)
            except _Refused:
                return await self.submit_for_the_model("refused")
            self.turns += 1
            turns_left -= 1
            ended = await self.answer(message)
            if ended is not None:
                return ended
        return await self.submit_for_the_model("max_turns")

    async def answer(self, message: dict[str, Any]) -> Ended | None:
        """Step the env with the calls of ``message``; how the episode ended, if it did."""
        content = _text_of(message.get("content"))
        native = message.get("tool_calls")
        unreadable: list[str] = []
        if isinstance(native, list) and native:
            calls = [_native_call(call, f"call_{self.turns}_{i}") for i, call in enumerate(native)]
            self.history.assistant(content, calls)
        else:
            parsed = parse_tool_calls(content or "", self.style, self.tools,
                                      id_prefix=f"call_{self.turns}_")
            calls = [openai_tool_call(c["id"], c["tool"], c["args"]) for c in parsed.calls]
            unreadable = [f"{e.id}: {e.message}" for e in parsed.errors]
            self.history.assistant(parsed.text if calls else content, calls)
            if not calls and not unreadable:
                return await self.submit_for_the_model("no_tool_call")
        ended: Ended | None = None
        for call in calls:
            if ended is not None:
                self.history.tool(call["id"], AFTER_END)
                continue
            obs, _reward, terminated, truncated, info = await self.env.get_wrapper_attr(
                "astep")(call)
            self.steps += 1
            self.last_info = info
            self.history.tool(call["id"], obs["text"], info.get("images", ()))
            if terminated or truncated:
                self.over = True
                ended = ("truncated" if truncated else
                         "environment_failed" if "crash" in info else "submitted")
        if unreadable:
            self.history.user("These tool calls could not be read (fix and call again):\n"
                              + "\n".join(unreadable))
        return ended

    async def submit_for_the_model(self, ended: Ended) -> Ended:
        """Grade what the policy left (the episode's end by ``ended``)."""
        if not self.over:
            *_, self.last_info = await self.env.get_wrapper_attr("astep")(SUBMIT)
            self.over = True
        return ended

    def result(self, ended: Ended, unsubmitted: str) -> EpisodeResult:
        info = self.last_info
        graded = info.get("reward")
        verdict = str(info.get("verdict", "none"))
        out = EpisodeResult(reward=0.0, components={}, verdict=verdict,
                            failure=info.get("failure"), ended=ended, steps=self.steps,
                            turns=self.turns, task_id=self.task_id,
                            messages=self.history.messages)
        if isinstance(graded, RewardResult):
            out.reason = graded.details.get("reason")
            if graded.graded:
                out.reward, out.components = graded.score, dict(graded.components)
        if verdict == "graded" and unsubmitted == "zero" and ended not in (
                "submitted", "environment_failed"):
            out.reward, out.components = 0.0, {}
            out.reason = (f"not submitted (ended: {ended}); unsubmitted='zero' gives 0.0 "
                          f"(the verifier said: {out.reason})")
        return out


def _text_of(content: Any) -> str | None:
    """A reply's content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p["text"] for p in content
                 if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str)]
        return "".join(parts) or None
    return None


def _native_call(call: Any, default_id: str) -> dict[str, Any]:
    """An entry of the reply's ``tool_calls`` as sent back in the chat, with an id (the
    model's, else ``default_id``); ``env.step`` takes it as it is."""
    if not isinstance(call, dict):
        return openai_tool_call(default_id, "", json.dumps(call, default=repr))
    found = call.get("function")
    function: dict[str, Any] = found if isinstance(found, dict) else {}
    given = call.get("id")
    call_id = given if isinstance(given, str) and given else default_id
    name = function.get("name")
    arguments = function.get("arguments", "{}")
    return openai_tool_call(call_id, name if isinstance(name, str) else "",
                            arguments if arguments is not None else "{}")
