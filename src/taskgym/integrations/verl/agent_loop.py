"""The taskgym agent loop for verl 0.9.1: :class:`TaskgymAgentLoop` (``"taskgym_agent"``).

verl's agent-loop worker makes one loop object per trajectory and awaits its ``run``. This
loop owns one taskgym env for the whole trajectory: it makes and resets it when ``run``
starts and closes it in a ``finally`` (never one sandbox per tool call). Per turn it asks
verl's server for tokens (``server_manager.generate``), decodes them, reads the calls with
:func:`taskgym.parse_tool_calls`, steps the env with each (its asyncio API), and appends the
results as ``tool`` messages, tokenised as the chat template renders them (verl's
Continuous Token builder, which its own ``ToolAgentLoop`` uses). ``response_mask`` is 1 on
the model's tokens and 0 on every token the loop added. The trajectory's ``reward_score``
is the verifier's; see docs/trainers.md "verl" for the episode policy and for what happens
to an episode with no verdict (its placeholder score of 0.0 and its response mask of zeros).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any, cast
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import (  # type: ignore[import-not-found, unused-ignore]
    AgentLoopBase,
    AgentLoopMetrics,
    AgentLoopOutput,
    register,
)
from verl.experimental.agent_loop.tool_parser import ToolParser  # type: ignore[import-not-found, unused-ignore]

from taskgym.core.registry import make
from taskgym.core.reward import RewardResult
from taskgym.core.verdicts import no_verdict_of
from taskgym.errors import ConfigError, SandboxError
from taskgym.integrations.chat_history import (
    AFTER_END,
    ChatHistory,
    openai_tool_call,
    template_messages,
)
from taskgym.integrations.endpoint_episode import SYSTEM_PROMPT
from taskgym.integrations.tool_calls import STYLES, ToolCallStyle, parse_tool_calls
from taskgym.integrations.verl.dataset import AGENT_NAME

__all__ = ["FORMATS", "TaskgymAgentLoop"]

FORMATS: dict[str, ToolCallStyle] = {"hermes": "hermes", "qwen3_coder": "xml", "glm": "glm",
                                     "gpt-oss": "harmony"}
"""verl's ``multi_turn.format`` names and the taskgym style that reads the same form."""
SUBMIT: dict[str, Any] = {"tool": "submit", "args": {}}
NOT_OFFERED = "error: {name} is not one of the tools of this episode ({offered}); nothing ran"


@register(AGENT_NAME)
class TaskgymAgentLoop(AgentLoopBase):  # type: ignore[misc, unused-ignore]
    """One taskgym episode per trajectory (see the module's docstring and docs/trainers.md).

    Keyword arguments (from the agent-loop file's entry, :func:`write_agent_loop_config`):
    ``unsubmitted`` (``"grade"``: an episode the model did not submit is graded as left;
    ``"zero"``: it scores 0.0), ``max_invalid_turns`` (replies in a row whose every call
    failed, unreadable or refused by the env, before the episode ends; 0 for no cap),
    ``system_prompt`` (used when the row has no system message), and ``style`` (a taskgym
    tool-call style; default: the one verl's ``multi_turn.format`` names).
    """

    def __init__(self, *args: Any, unsubmitted: str = "grade", max_invalid_turns: int = 3,
                 system_prompt: str | None = SYSTEM_PROMPT, style: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # verl's own tools (``tools=``) go there, unused
        if unsubmitted not in ("grade", "zero"):
            raise ConfigError(f"unsubmitted={unsubmitted!r}: give 'grade' or 'zero'")
        multi_turn = self.rollout_config.multi_turn
        if style is None:
            verl_format = str(multi_turn.format)
            if verl_format not in FORMATS:
                raise ConfigError(f"multi_turn.format={verl_format!r} has no taskgym reader; use "
                                  f"one of {', '.join(FORMATS)} or give the loop a style")
            style = FORMATS[verl_format]
        if style not in STYLES:
            raise ConfigError(f"style={style!r}: choose from {', '.join(STYLES)}")
        self.style = cast(ToolCallStyle, style)
        try:  # the tokens after which verl's own parser for the format needs generation to stop
            parser = ToolParser.get_tool_parser(str(multi_turn.format), self.tokenizer)
            self.stop_token_ids: list[int] = list(parser.stop_token_ids)
        except ValueError:  # a format verl has no parser for (the loop was given a style)
            self.stop_token_ids = []
        self.unsubmitted = unsubmitted
        self.max_invalid_turns = int(max_invalid_turns)
        self.system_prompt = system_prompt
        self.max_assistant_turns = multi_turn.max_assistant_turns
        self.max_user_turns = multi_turn.max_user_turns
        self.max_tool_response_length = multi_turn.max_tool_response_length
        self.truncate_side = multi_turn.tool_response_truncate_side
        self.response_length = int(self.rollout_config.response_length)

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        row = _Row(kwargs.get("extra_info") or {})
        env = make(row.env_id, **row.make_kwargs)
        try:
            try:
                obs, info = await env.get_wrapper_attr("areset")(seed=row.seed,
                                                                 options=row.options)
            except ConfigError as exc:
                if not isinstance(exc, SandboxError):
                    raise  # a task the env does not have: the dataset's to fix
                return await self._unstarted(kwargs, exc)
            except Exception as exc:  # the sandbox could not start: no verdict, not a crash
                return await self._unstarted(kwargs, exc)
            episode = _Trajectory(self, env, info, row,
                                  self._history(kwargs.get("raw_prompt"), obs["text"]))
            await episode.play(sampling_params)
            return episode.output(self.unsubmitted)
        finally:
            await env.get_wrapper_attr("aclose")()

    def _history(self, raw_prompt: Any, instruction: str) -> ChatHistory:
        """The chat: the row's system message (else the loop's), then its user text with the
        task's instruction after it."""
        messages = [dict(m) for m in raw_prompt or () if isinstance(m, Mapping)]
        system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"),
                      self.system_prompt)
        user = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
        lead = user[-1].strip() if user else ""
        return ChatHistory(f"{lead}\n\n{instruction}" if lead else instruction, system)

    async def _unstarted(self, kwargs: Mapping[str, Any], exc: BaseException) -> AgentLoopOutput:
        """A trajectory whose env could not start: no verdict, one masked token."""
        known = no_verdict_of(exc)
        failure = str(known.failure) if known is not None else "sandbox_start"
        history = self._history(kwargs.get("raw_prompt"), "")
        prompt_ids = await self.ct_build_initial_tokens(template_messages(history.messages))
        token = self.tokenizer.eos_token_id if self.tokenizer.eos_token_id is not None else 0
        return AgentLoopOutput(
            prompt_ids=prompt_ids, response_ids=[token], response_mask=[0], reward_score=0.0,
            num_turns=1, metrics=AgentLoopMetrics(),
            extra_fields=outcome_fields(None, "none", {}, failure, "reset_failed",
                                        f"{type(exc).__name__}: {exc}", None, 0,
                                        history.messages))


def outcome_fields(reward: float | None, verdict: str, components: Mapping[str, float],
                   failure: str | None, ended: str, reason: str | None, task_id: str | None,
                   steps: int, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``extra_fields`` every taskgym trajectory carries (the same keys each time, so
    verl's batches concatenate), beside verl's own ``turn_scores`` and ``tool_rewards``."""
    return {"taskgym_reward": reward, "taskgym_verdict": verdict,
            "taskgym_components": dict(components), "taskgym_failure": failure,
            "taskgym_ended": ended, "taskgym_reason": reason, "taskgym_task_id": task_id,
            "taskgym_steps": steps, "taskgym_messages": messages,
            "turn_scores": [], "tool_rewards": []}


class _Row:
    """What a dataset row says about its episode (docs: the dataset's columns)."""

    def __init__(self, extra_info: Mapping[str, Any]) -> None:
        env_id = extra_info.get("env_id")
        if not isinstance(env_id, str) or not env_id:
            raise ConfigError("the row's extra_info has no env_id: make the dataset with "
                              "taskgym.integrations.verl.dataset_rows")
        self.env_id = env_id
        task_id, seed = extra_info.get("task_id"), extra_info.get("seed")
        self.options = {"task_id": str(task_id)} if task_id is not None else None
        self.seed = None if seed is None else int(seed)
        text = extra_info.get("make_kwargs") or "{}"
        self.make_kwargs: dict[str, Any] = json.loads(text) if isinstance(text, str) else dict(text)
        selection = extra_info.get("tool_selection")
        self.tool_selection = None if selection is None else [str(s) for s in selection]


class _Trajectory:
    """One episode's state while it plays: the chat, the token stream and the env."""

    def __init__(self, loop: TaskgymAgentLoop, env: Any, info: dict[str, Any], row: _Row,
                 history: ChatHistory) -> None:
        self.loop, self.env, self.history = loop, env, history
        offered = row.tool_selection
        self.tools = [t for t in info["tools"]
                      if offered is None or t["function"]["name"] in offered]
        self.names = {t["function"]["name"] for t in self.tools}
        self.task_id: str = info["task_id"]
        self.last_info = info
        self.prompt_ids: list[int] = []
        self.mask: list[int] = []
        self.logprobs: list[float] = []
        self.turns = self.tool_turns = self.steps = 0
        self.invalid_streak = 0
        self.over = False
        self.ended = "submitted"
        self.metrics = AgentLoopMetrics(num_preempted=-1)
        self.request_id = uuid4().hex

    async def play(self, sampling_params: dict[str, Any]) -> None:
        loop = self.loop
        self.prompt_ids = await loop.ct_build_initial_tokens(
            template_messages(self.history.messages), tools=self.tools)
        while True:
            reply = await self.generate(sampling_params)
            if len(self.mask) >= loop.response_length:
                return await self.finish("response_length")
            ended = await self.answer(reply)
            if ended is not None:
                return await self.finish(ended)

    async def generate(self, sampling_params: dict[str, Any]) -> str:
        """The model's next reply, merged into the token stream with mask 1."""
        stops = self.loop.stop_token_ids
        if stops:  # as verl's ToolAgentLoop adds them
            given = sampling_params.get("stop_token_ids") or []
            sampling_params = {**sampling_params, "stop_token_ids": sorted({*given, *stops})}
        started = time.perf_counter()
        output = await self.loop.server_manager.generate(
            request_id=self.request_id, prompt_ids=self.prompt_ids,
            sampling_params=sampling_params)
        self.metrics.generate_sequences += time.perf_counter() - started
        if output.num_preempted is not None:
            self.metrics.num_preempted = max(self.metrics.num_preempted, 0) + output.num_preempted
        self.turns += 1
        merged, self.mask, logprobs = await self.loop.ct_merge_assistant_token(
            self.prompt_ids, output.token_ids, self.mask, self.logprobs or None,
            assistant_logprobs=output.log_probs or None)
        self.prompt_ids = merged.token_ids
        self.logprobs = logprobs or []
        return str(self.loop.tokenizer.decode(output.token_ids, skip_special_tokens=False))

    async def answer(self, reply: str) -> str | None:
        """Step the env with the reply's calls and add the results to the token stream
        (mask 0); how the episode ended, if it did."""
        eos = self.loop.tokenizer.eos_token
        text = reply.removesuffix(eos) if isinstance(eos, str) and eos else reply
        parsed = parse_tool_calls(text, self.loop.style, self.tools,
                                  id_prefix=f"call_{self.turns}_")
        calls = [openai_tool_call(c["id"], c["tool"], c["args"]) for c in parsed.calls]
        self.history.assistant(parsed.text if calls else text, calls)
        if not calls and not parsed.errors:
            return "no_tool_call"
        before = list(self.history.messages)
        failed = len(parsed.errors)
        started = time.perf_counter()
        for call, action in zip(calls, parsed.calls, strict=True):
            failed += await self.run_call(call["id"], action)
        self.metrics.tool_calls += time.perf_counter() - started
        if parsed.errors:
            self.history.user("These tool calls could not be read (fix and call again):\n"
                              + "\n".join(f"{e.id}: {e.message}" for e in parsed.errors))
        self.invalid_streak = self.invalid_streak + 1 if failed == len(calls) + len(
            parsed.errors) else 0
        # an episode that ends here ends on the model's reply: what answers it is not tokenised
        loop = self.loop
        if self.over:
            return self.ended
        if (loop.max_assistant_turns and self.turns >= loop.max_assistant_turns
                or loop.max_user_turns and self.tool_turns >= loop.max_user_turns):
            return "max_turns"
        if loop.max_invalid_turns and self.invalid_streak >= loop.max_invalid_turns:
            return "invalid_calls"
        merged, mask, logprobs = await loop.ct_merge_context_msg(
            template_messages(before), template_messages(self.history.messages),
            self.prompt_ids, self.mask, self.logprobs or None, tools=self.tools)
        if len(mask) >= loop.response_length:  # as verl's ToolAgentLoop: not added
            return "response_length"
        self.prompt_ids, self.mask, self.logprobs = merged.token_ids, mask, logprobs or []
        self.tool_turns += 1
        return None

    async def run_call(self, call_id: str, action: dict[str, Any]) -> int:
        """Run one call and add its ``tool`` message; 1 when it failed (not offered, or the
        env answered with an error), else 0."""
        if self.over:
            self.history.tool(call_id, AFTER_END)
            return 0
        if action["tool"] not in self.names:
            self.history.tool(call_id, NOT_OFFERED.format(name=action["tool"],
                                                          offered=", ".join(sorted(self.names))))
            return 1
        obs, _reward, terminated, truncated, info = await self.env.get_wrapper_attr("astep")(action)
        self.steps += 1
        self.last_info = info
        self.history.tool(call_id, self.cut(str(obs["text"])))
        if terminated or truncated:
            self.over = True
            self.ended = ("truncated" if truncated else
                          "environment_failed" if info.get("verdict") == "none" else "submitted")
        return 1 if "error" in info and not self.over else 0

    def cut(self, text: str) -> str:
        """A tool's text cut to verl's ``max_tool_response_length`` (its side, as verl cuts)."""
        limit = self.loop.max_tool_response_length
        if not limit or len(text) <= limit:
            return text
        if self.loop.truncate_side == "left":  # the left is cut: the end is kept
            return "(truncated)..." + text[-limit:]
        if self.loop.truncate_side == "right":
            return text[:limit] + "...(truncated)"
        half = limit // 2
        return text[:half] + "...(truncated)..." + text[-half:]

    async def finish(self, ended: str) -> None:
        """End the episode: an env still running is submitted for the model, so the verifier
        grades what the policy left."""
        if not self.over:
            self.ended = ended
            *_, self.last_info = await self.env.get_wrapper_attr("astep")(SUBMIT)
            self.over = True

    def output(self, unsubmitted: str) -> AgentLoopOutput:
        """The trajectory for verl: the verifier's score, or for no verdict a placeholder
        0.0 with every response token masked."""
        info = self.last_info
        result = info.get("reward")
        verdict = str(info.get("verdict", "none"))
        failure = info.get("failure")
        reward: float | None = None
        components: dict[str, float] = {}
        reason: str | None = None
        if isinstance(result, RewardResult):
            reason = result.details.get("reason")
            verdict, failure = result.verdict, result.failure
            if result.graded:
                reward, components = float(result.score), dict(result.components)
        if verdict == "graded" and unsubmitted == "zero" and self.ended not in (
                "submitted", "environment_failed"):
            reward, components = 0.0, {}
            reason = f"not submitted (ended: {self.ended}); unsubmitted='zero' gives 0.0"
        length = self.loop.response_length
        response_ids = self.prompt_ids[len(self.prompt_ids) - len(self.mask):][:length]
        prompt_ids = self.prompt_ids[:len(self.prompt_ids) - len(self.mask)]
        mask = self.mask[:length] if reward is not None else [0] * min(len(self.mask), length)
        fields = outcome_fields(reward, verdict, components,
                                None if failure is None else str(failure), self.ended, reason,
                                self.task_id, self.steps, self.history.messages)
        return AgentLoopOutput(
            prompt_ids=prompt_ids, response_ids=response_ids, response_mask=mask,
            response_logprobs=self.logprobs[:length] or None,
            reward_score=reward if reward is not None else 0.0,
            num_turns=1 + self.turns + self.tool_turns, metrics=self.metrics,
            extra_fields=fields)

