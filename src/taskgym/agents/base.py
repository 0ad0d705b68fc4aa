"""The agent interface and the agents that need no model.

An agent turns an observation and its info into one action. A new episode is
recognised by ``info["step"] == 0`` (what :meth:`TaskEnv.reset` returns).
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Sequence
from typing import Any

import gymnasium as gym

from taskgym.errors import ConfigError

__all__ = ["Agent", "NullAgent", "OracleAgent", "RandomAgent", "ScriptedAgent", "make_agent"]

SUBMIT: dict[str, Any] = {"tool": "submit", "args": {}}


class Agent(abc.ABC):
    """Chooses actions; ``act`` is called once per step."""

    name: str = "agent"

    @abc.abstractmethod
    def act(self, observation: dict[str, str], info: dict[str, Any]) -> Any:
        """The next action for this observation."""


class NullAgent(Agent):
    """Submits at once: the do-nothing baseline that must score zero."""

    name = "null"

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> Any:
        return SUBMIT


class OracleAgent(Agent):
    """Replays the current task's reference solution, then submits."""

    name = "oracle"

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        self.env = env
        self._queue: list[Any] = []

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> Any:
        if info.get("step") == 0:
            base = self.env.unwrapped
            self._queue = list(base.oracle_actions(base.task))  # type: ignore[attr-defined]
        return self._queue.pop(0) if self._queue else SUBMIT


class RandomAgent(Agent):
    """Samples the action space: random but well-formed tool calls (for fuzzing)."""

    name = "random"

    def __init__(self, env: gym.Env[Any, Any], seed: int | None = None) -> None:
        self.space = env.action_space
        if seed is not None:
            self.space.seed(seed)

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> Any:
        return self.space.sample()


class ScriptedAgent(Agent):
    """Plays a fixed list of actions each episode, then submits."""

    name = "scripted"

    def __init__(self, actions: Iterable[Any]) -> None:
        self.actions: Sequence[Any] = list(actions)
        self._next = 0

    def act(self, observation: dict[str, str], info: dict[str, Any]) -> Any:
        if info.get("step") == 0:
            self._next = 0
        if self._next >= len(self.actions):
            return SUBMIT
        self._next += 1
        return self.actions[self._next - 1]


def make_agent(name: str, env: gym.Env[Any, Any], **kwargs: Any) -> Agent:
    """``"oracle"``, ``"null"``, ``"random"``, ``"scripted"`` (``actions=[...]``) or
    ``"openai"`` (``base_url=..., model=...``)."""
    if name == "oracle":
        return OracleAgent(env)
    if name == "null":
        return NullAgent()
    if name == "random":
        return RandomAgent(env, **kwargs)
    if name == "scripted":
        if "actions" not in kwargs:
            raise ConfigError("the scripted agent needs actions=[...]")
        return ScriptedAgent(kwargs["actions"])
    if name == "openai":
        from taskgym.agents.openai_chat import OpenAIChatAgent

        return OpenAIChatAgent(**kwargs)
    raise ConfigError(f"unknown agent {name!r}; choose oracle, null, random, scripted or openai")
