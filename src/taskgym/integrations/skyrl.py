"""taskgym envs for SkyRL: a ``skyrl_gym`` ``BaseTextEnv`` (skyrl-gym 0.4.0).

SkyRL's generator (``skyrl`` 0.3.0, ``SkyRLGymGenerator.agent_loop``) makes one env per
trajectory with ``skyrl_gym.make(env_class, env_config=..., extras=row)`` on its asyncio
event-loop thread, then runs ``init(prompt)``, each ``step(model_text)`` and ``close()`` on a
thread pool (``max_env_workers``, 32 by default). It gives the model no tool schemas (the
chat template gets none) and reads a float reward from every step; step metadata is not read,
``get_metrics()`` lands in the trajectory's ``env_metrics``.

So :class:`TaskgymTextEnv`:

- is cheap to construct: ``__init__`` only reads its configuration (no ``taskgym.make``, no
  sandbox); ``init`` makes the env and starts the sandbox, on SkyRL's worker thread;
- renders the env's tools into the prompt (:func:`tools_prompt`: a system message with the
  JSON schemas and the call format the model should write) and appends the task's instruction
  to the prompt's last user message;
- parses each reply with :func:`taskgym.parse_tool_calls` and runs its calls in order; a call
  that cannot be read is answered with an error, never an exception;
- ends the episode when the env ends it (a submit, or its own budget) or at ``max_turns``
  (then unsubmitted: the sandbox is stopped ungraded and the reward is ``unsubmitted``,
  0.0 by default); the reward on the last step is the verifier's, and 0.0 on every other;
- reports an episode with no verdict (the environment failed, not the policy) in the last
  step's metadata and in :meth:`~TaskgymTextEnv.get_metrics` (``no_verdict`` 1.0). Its reward
  is 0.0 only because SkyRL requires a float; :func:`no_verdict_trajectories` and
  :func:`mask_no_verdict` find and mask those trajectories in SkyRL's generator output;
- releases everything in ``close`` (idempotent), and by a finalizer when SkyRL drops an env
  without closing it (a trajectory that raised).

Importing this module registers the id ``taskgym`` (the env id comes from the row's
``env_id`` column or ``env_config``); :func:`register` adds an id bound to one env id.
"""

from __future__ import annotations

import json
import logging
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import gymnasium as gym
from skyrl_gym import error as skyrl_error  # type: ignore[import-not-found]
from skyrl_gym import register as skyrl_register
from skyrl_gym import registry as skyrl_registry
from skyrl_gym.envs.base_text_env import (  # type: ignore[import-not-found]
    BaseTextEnv,
    BaseTextEnvStepOutput,
)

from taskgym.core.env import TaskEnv
from taskgym.core.registry import NAMESPACE, load_plugins, make
from taskgym.core.tool import Tool
from taskgym.core.verdicts import no_verdict_of
from taskgym.errors import ConfigError, SandboxError
from taskgym.integrations.tool_calls import ToolCallError, parse_tool_calls

__all__ = ["AFTER_END", "ENTRY_POINT", "TOOL_STYLES", "TaskgymTextEnv", "mask_no_verdict",
           "no_verdict_trajectories", "register", "tools_prompt"]

log = logging.getLogger(__name__)

ENTRY_POINT = "taskgym.integrations.skyrl:TaskgymTextEnv"
"""The ``entry_point`` every id registered here names (a string, so any process that has
registered the id can make it)."""
TOOL_STYLES = ("hermes", "xml")
"""The call formats :func:`tools_prompt` can ask for (the replies are parsed in any format
:func:`taskgym.parse_tool_calls` reads)."""
AFTER_END = "error: the episode is over; this call was not run."
"""The answer to a call of a reply that comes after the call that ended the episode."""
NO_CALL = ("error: your reply holds no tool call. Call a tool in the format given in the "
           "system message; call submit when you are done.")
"""The observation of a reply with no call in it (the episode goes on until ``max_turns``)."""
_RESET_FAILED = "The environment could not start this episode ({reason}). Reply with no tool call."
_SETTINGS = ("env_id", "make_kwargs", "tool_style", "system_prompt", "unsubmitted",
             "observation_role")


def tools_prompt(tools: Iterable[Mapping[str, Any]], style: str = "hermes") -> str:
    """The system-prompt text that describes ``tools`` (OpenAI tool specs, as
    ``info["tools"]`` holds them) and the call format ``style`` (one of :data:`TOOL_STYLES`):
    one JSON schema a line between ``<tools>`` tags, then what a call looks like."""
    if style not in TOOL_STYLES:
        raise ConfigError(f"tool_style must be one of {', '.join(TOOL_STYLES)}, not {style!r}")
    schemas = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
    if style == "hermes":
        form = ('<tool_call>\n{"name": "<tool name>", "arguments": {<the arguments as a JSON '
                'object>}}\n</tool_call>')
    else:
        form = ("<tool_call>\n<function=TOOL_NAME>\n<parameter=ARGUMENT_NAME>\nvalue\n"
                "</parameter>\n</function>\n</tool_call>")
    return ("# Tools\n\nYou act only through the tools below, each given as a JSON schema "
            f"between <tools> tags:\n<tools>\n{schemas}\n</tools>\n\nTo call a tool, write the "
            f"call in this form (one block per call; several calls may follow each other):\n"
            f"{form}\n\nEach call's result comes back in a <tool_response> block. Call submit "
            "when the task is done: the episode ends and your work is graded.")


def register(id: str = "taskgym", env_id: str | None = None, /, **settings: Any) -> None:
    """Register ``id`` with ``skyrl_gym`` so that ``skyrl_gym.make(id, env_config=...,
    extras=row)`` makes a :class:`TaskgymTextEnv`. ``env_id`` binds the id to one taskgym env
    (else each row's ``env_id`` column, or ``env_config["env_id"]``, names it); ``settings``
    are the env's (``make_kwargs``, ``tool_style``, ``system_prompt``, ``unsubmitted``,
    ``observation_role``: see :class:`TaskgymTextEnv`). Registering an id again with the same
    arguments does nothing; with others it raises ``skyrl_gym``'s ``RegistrationError``."""
    unknown = sorted(set(settings) - set(_SETTINGS))
    if unknown:
        raise ConfigError(f"unknown settings {unknown}; known: {', '.join(_SETTINGS[1:])}")
    kwargs = {"env_id": env_id, **settings}
    _check_settings(settings)  # a bad setting fails here, not in SkyRL's loop
    if env_id is not None:
        TaskgymTextEnv(env_config={}, extras={}, **kwargs)
    known = skyrl_registry.get(id)
    if known is not None and known.entry_point == ENTRY_POINT and known.kwargs == kwargs:
        return
    if known is not None:
        raise skyrl_error.RegistrationError(
            f"skyrl_gym id {id!r} is registered already (entry point {known.entry_point}, "
            f"kwargs {known.kwargs}); pick another id")
    skyrl_register(id=id, entry_point=ENTRY_POINT, kwargs=kwargs)


class TaskgymTextEnv(BaseTextEnv):  # type: ignore[misc]
    """One taskgym episode as a SkyRL text env (see the module's docstring).

    Settings, each from the row's ``extras`` (``env_id``, ``task_id``, ``seed``, and SkyRL's
    ``max_turns``), else ``env_config`` (SkyRL's ``environment.skyrl_gym.<id>`` section), else
    the registration's keyword arguments:

    - ``env_id``: the taskgym env id (required somewhere);
    - ``make_kwargs``: ``taskgym.make``'s keyword arguments (``tasks``, ``sandbox``,
      ``max_steps``, ...); ``env_config``'s update the registration's;
    - ``tool_style``: the call format the prompt asks for, ``"hermes"`` (default) or ``"xml"``;
    - ``system_prompt``: text put before the tools' description;
    - ``unsubmitted``: the reward of an episode that ``max_turns`` ended before a submit
      (0.0 by default, a float: SkyRL takes nothing else);
    - ``observation_role``: ``"user"`` (default: one message with a ``<tool_response>``
      block per call) or ``"tool"`` (one ``tool`` message per call, for templates that
      render tool results).
    """

    def __init__(self, env_config: Any = None, extras: Mapping[str, Any] | None = None,
                 **registered: Any) -> None:
        super().__init__()
        config = {**{k: v for k, v in registered.items() if v is not None}, **_plain(env_config)}
        row = dict(extras or {})
        env_id = row.get("env_id") or config.get("env_id")
        if not isinstance(env_id, str) or not env_id:
            raise ConfigError("no taskgym env id: give the row an env_id column, set env_config"
                              "['env_id'], or register an id bound to one (taskgym.integrations."
                              "skyrl.register('my-env', 'coding-terminal-v0'))")
        self.env_id = env_id.removeprefix(f"{NAMESPACE}/")
        self.make_kwargs = {**_plain(registered.get("make_kwargs")),
                            **_plain(_plain(env_config).get("make_kwargs"))}
        if self.make_kwargs.get("on_no_verdict", "end") != "end":
            raise ConfigError("SkyRL needs on_no_verdict='end' (a raise inside a trajectory stops "
                              "the whole batch); no-verdict episodes are reported in get_metrics")
        _check_settings(config)
        self.tool_style = str(config.get("tool_style", "hermes"))
        self.system_prompt = str(config.get("system_prompt") or "")
        self.unsubmitted = float(config.get("unsubmitted", 0.0))
        self.observation_role = str(config.get("observation_role", "user"))
        self.max_turns = int(row.get("max_turns", config.get("max_turns", 1)))
        if self.max_turns < 1:
            raise ConfigError(f"max_turns must be at least 1, not {self.max_turns}")
        self.task_id = None if row.get("task_id") is None else str(row["task_id"])
        self.seed = None if row.get("seed") is None else int(row["seed"])
        load_plugins()
        if f"{NAMESPACE}/{self.env_id}" not in gym.registry:
            raise ConfigError(f"no taskgym env {self.env_id!r}; `taskgym list` shows them")
        self.env: gym.Env[Any, Any] | None = None
        self._lock = threading.Lock()
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self._closed = False
        self._over = False
        self._metrics: dict[str, float] = {}
        self._ending: dict[str, Any] = {}
        self._calls = 0
        self._errors = 0
        self._tools: list[Tool] = []

    # -- SkyRL's API -------------------------------------------------------------------
    def init(self, prompt: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        """Make the env, start its sandbox on a task (the row's ``task_id`` or ``seed``, else
        drawn), and return the prompt with the tools' system message and the instruction.
        A sandbox that cannot start does not raise: the prompt says so and the first step
        ends the episode with no verdict."""
        with self._lock:
            if self._closed:
                raise ConfigError("this env is closed; SkyRL makes a new one per trajectory")
            env = make(self.env_id, **self.make_kwargs)
            self.env = env
            self._finalizer = weakref.finalize(self, env.close)
            self._tools = list(_task_env(env).tools)
            tools = [tool.openai() for tool in self._tools]
            options = {"task_id": self.task_id} if self.task_id is not None else None
            try:
                observation, _info = env.reset(seed=self.seed, options=options)
                instruction = str(observation["text"])
            except ConfigError as exc:
                if not isinstance(exc, SandboxError):
                    raise  # the row names a task the env does not have: the dataset's to fix
                instruction = self._reset_failed(exc)
            except Exception as exc:  # the sandbox or the grader's preflight failed
                instruction = self._reset_failed(exc)
            return self._prompt(prompt, tools, instruction), {"env_id": self.env_id,
                                                             "task_id": self._task_id()}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Run the tool calls of one reply, in order; see the class's docstring."""
        with self._lock:
            if self.env is None:
                raise ConfigError("init(prompt) must come before step")
            if self._over or self._ending.get("end") == "reset_failed":
                return self._output([], done=True)
            self.turns += 1
            results = self._run_calls(action if isinstance(action, str) else str(action))
            if not self._over and self.turns >= self.max_turns:
                _task_env(self.env).end_episode()
                self._end("unsubmitted", self.unsubmitted, reason=f"max_turns ({self.max_turns}) "
                          "was reached before the policy submitted")
            return self._output(self._observations(results), done=self._over)

    def get_metrics(self) -> dict[str, float]:
        """The episode's numbers, for SkyRL's ``environment/<key>`` means: ``reward``,
        ``graded``, ``no_verdict``, ``unsubmitted`` and ``reset_failed`` (1.0 or 0.0),
        ``turns``, ``tool_calls``, ``tool_call_errors`` (calls that could not be read), and
        each verifier component as ``component/<name>``. Asked while the episode runs (SkyRL
        stopped the trajectory at its ``max_input_length``), it counts the episode as
        unsubmitted with reward 0.0, which it is: ``close`` stops its sandbox ungraded."""
        metrics = self._metrics or {"reward": 0.0, "graded": 0.0, "no_verdict": 0.0,
                                    "unsubmitted": 1.0, "reset_failed": 0.0}
        return {**metrics, "turns": float(self.turns), "tool_calls": float(self._calls),
                "tool_call_errors": float(self._errors)}

    def close(self) -> None:
        """Stop the sandbox and release the env; a second call does nothing."""
        with self._lock:
            self._closed = True
            if self._finalizer is not None:
                self._finalizer()  # env.close(), once
            self.env = None

    # -- the episode -------------------------------------------------------------------
    def _run_calls(self, text: str) -> list[tuple[str, str]]:
        """``(call id, text)`` for each call of the reply, in the order of the text."""
        assert self.env is not None
        prefix = f"t{self.turns}_"
        parsed = parse_tool_calls(text, tools=self._tools, id_prefix=prefix)
        self._calls += len(parsed.calls)
        self._errors += len(parsed.errors)
        if not parsed.calls and not parsed.errors:
            return [("", NO_CALL)]
        items: dict[str, dict[str, Any] | ToolCallError] = {c["id"]: c for c in parsed.calls}
        items.update({e.id: e for e in parsed.errors})
        results = []
        for number in range(len(items)):
            call_id = f"{prefix}{number}"
            item = items[call_id]
            if self._over:
                results.append((call_id, AFTER_END))
            elif isinstance(item, ToolCallError):
                results.append((call_id, f"error: the call could not be read: {item.message}"))
            else:
                results.append((call_id, self._run(item)))
        return results

    def _run(self, call: dict[str, Any]) -> str:
        assert self.env is not None
        observation, reward, terminated, truncated, info = self.env.step(call)
        if terminated or truncated:
            result = info.get("reward")
            components = dict(getattr(result, "components", {}) or {})
            if info.get("verdict") == "none":
                self._end("no_verdict", 0.0, components, failure=str(info.get("failure")),
                          reason=str(info.get("error", "")))
            else:
                self._end("env", float(reward), components)
        return str(observation["text"])

    def _end(self, end: str, reward: float, components: Mapping[str, float] | None = None,
             failure: str | None = None, reason: str | None = None) -> None:
        self._over = True
        verdict = "none" if end in ("no_verdict", "reset_failed") else "graded"
        self._ending = {"end": end, "verdict": verdict, "reward": reward, "task_id": self._task_id(),
                        **({"failure": failure} if failure else {}),
                        **({"reason": reason} if reason else {}),
                        "components": dict(components or {})}
        self._metrics = {"reward": reward, "graded": float(end == "env"),
                         "no_verdict": float(verdict == "none"),
                         "unsubmitted": float(end == "unsubmitted"),
                         "reset_failed": float(end == "reset_failed"),
                         **{f"component/{k}": float(v) for k, v in (components or {}).items()}}

    def _reset_failed(self, exc: BaseException) -> str:
        reason = f"{type(exc).__name__}: {exc}"
        known = no_verdict_of(exc)
        log.warning("taskgym %s: init failed, the trajectory has no verdict: %s", self.env_id,
                    reason)
        self._end("reset_failed", 0.0, failure=str(known.failure) if known is not None
                  else "sandbox_start", reason=reason)
        self._over = False  # the first step ends it, so that SkyRL sees done with the metadata
        return _RESET_FAILED.format(reason=reason)

    def _output(self, observations: list[dict[str, Any]], done: bool) -> BaseTextEnvStepOutput:
        if self._ending.get("end") == "reset_failed":
            self._over = done = True
        reward = float(self._ending["reward"]) if done and self._ending else 0.0
        metadata = dict(self._ending) if done else {"turn": self.turns}
        return BaseTextEnvStepOutput(observations=observations, reward=reward, done=done,
                                     metadata=metadata, postprocessed_action=None)

    def _observations(self, results: list[tuple[str, str]]) -> list[dict[str, Any]]:
        if self.observation_role == "tool":
            return [{"role": "tool", "content": text} for _call_id, text in results]
        body = "\n".join(f"<tool_response>\n{text}\n</tool_response>" if call_id else text
                         for call_id, text in results)
        return [{"role": "user", "content": body}]

    def _prompt(self, prompt: Sequence[Mapping[str, Any]], tools: list[dict[str, Any]],
                instruction: str) -> list[dict[str, Any]]:
        messages = [dict(m) for m in prompt]
        described = tools_prompt(tools, self.tool_style)
        if self.system_prompt:
            described = f"{self.system_prompt}\n\n{described}"
        if messages and messages[0].get("role") == "system":
            messages[0]["content"] = f"{messages[0].get('content') or ''}\n\n{described}".lstrip()
        else:
            messages.insert(0, {"role": "system", "content": described})
        if messages[-1].get("role") == "user":
            before = str(messages[-1].get("content") or "")
            messages[-1]["content"] = f"{before}\n\n{instruction}" if before else instruction
        else:
            messages.append({"role": "user", "content": instruction})
        return messages

    def _task_id(self) -> str | None:
        task = _task_env(self.env).task if self.env is not None else None
        return task.id if task is not None else self.task_id


def no_verdict_trajectories(generator_output: Mapping[str, Any]) -> list[int]:
    """The indices of the trajectories in SkyRL's ``GeneratorOutput`` whose taskgym episode
    ended with no verdict (their ``env_metrics`` say ``no_verdict`` 1.0)."""
    metrics = generator_output.get("env_metrics") or []
    return [i for i, m in enumerate(metrics) if isinstance(m, Mapping) and m.get("no_verdict") == 1.0]


def mask_no_verdict(generator_output: dict[str, Any]) -> list[int]:
    """Zero the loss masks of the no-verdict trajectories of SkyRL's ``GeneratorOutput`` (in
    place), so that no gradient comes from them; returns their indices. Their 0.0 reward still
    counts in their group's baseline (SkyRL computes it from every reward of the group)."""
    found = no_verdict_trajectories(generator_output)
    masks = generator_output.get("loss_masks")
    if masks is not None:
        for i in found:
            masks[i] = [0] * len(masks[i])
    return found


def _check_settings(settings: Mapping[str, Any]) -> None:
    if settings.get("tool_style", "hermes") not in TOOL_STYLES:
        raise ConfigError(f"tool_style must be one of {', '.join(TOOL_STYLES)}, not "
                          f"{settings['tool_style']!r}")
    if settings.get("observation_role", "user") not in ("user", "tool"):
        raise ConfigError(f"observation_role must be 'user' or 'tool', not "
                          f"{settings['observation_role']!r}")
    try:
        float(settings.get("unsubmitted", 0.0))
    except (TypeError, ValueError):
        raise ConfigError(f"unsubmitted must be a number (SkyRL takes a float reward), not "
                          f"{settings['unsubmitted']!r}") from None


def _task_env(env: gym.Env[Any, Any] | None) -> TaskEnv:
    unwrapped = env.unwrapped if env is not None else None
    if not isinstance(unwrapped, TaskEnv):
        raise ConfigError("not a taskgym env")
    return unwrapped


def _plain(value: Any) -> dict[str, Any]:
    """A mapping (an OmegaConf ``DictConfig`` included, as SkyRL passes ``env_config``) as a
    plain dict; ``None`` as an empty one."""
    if value is None:
        return {}
    try:
        from omegaconf import DictConfig, OmegaConf  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - skyrl-gym depends on omegaconf
        DictConfig = ()  # noqa: N806
    if isinstance(value, DictConfig):
        return dict(OmegaConf.to_container(value, resolve=True))
    if not isinstance(value, Mapping):
        raise ConfigError(f"expected a mapping, not {type(value).__name__}")
    return dict(value)


if "taskgym" not in skyrl_registry:
    register("taskgym")
