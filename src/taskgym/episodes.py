"""``taskgym.run_episode``: one name for the two ways to play an episode.

- ``taskgym.run_episode(env, agent, ...)`` plays it here, synchronously, with a taskgym
  :class:`~taskgym.agents.Agent` and returns an :class:`~taskgym.evaluation.EpisodeRecord`
  (:func:`taskgym.evaluation.run_episode`, what ``taskgym run`` and ``evaluate`` use);
- ``await taskgym.run_episode(env_id, base_url=..., model=..., ...)`` plays it with a model
  behind an OpenAI-compatible endpoint and returns an
  :class:`~taskgym.integrations.EpisodeResult`
  (:func:`taskgym.integrations.endpoint_episode.run_episode`, for trainers).

The first argument decides: an env, or an env id. Both functions keep their own names in
their own modules; this one only forwards, so no caller of either changes.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, overload

import gymnasium as gym

from taskgym.errors import ConfigError
from taskgym.evaluation import run_episode as play_with_agent
from taskgym.integrations.endpoint_episode import run_episode as play_with_endpoint

if TYPE_CHECKING:
    from taskgym.agents import Agent
    from taskgym.evaluation import EpisodeRecord
    from taskgym.integrations.endpoint_episode import EpisodeResult

__all__ = ["run_episode"]


@overload
def run_episode(env: gym.Env[Any, Any], agent: Agent, /, **kwargs: Any) -> EpisodeRecord: ...


@overload
def run_episode(env: str, /, **kwargs: Any) -> Coroutine[Any, Any, EpisodeResult]: ...


def run_episode(env: gym.Env[Any, Any] | str, agent: Agent | None = None, /, **kwargs: Any
                ) -> EpisodeRecord | Coroutine[Any, Any, EpisodeResult]:
    """An env and an agent: :func:`taskgym.evaluation.run_episode`; an env id (and keyword
    arguments only): a coroutine of :func:`taskgym.integrations.endpoint_episode.run_episode`
    to await."""
    if isinstance(env, str):
        if agent is not None:
            raise ConfigError("run_episode(env_id, ...) plays a model behind an endpoint: give "
                              "base_url= and model=, not an agent (or give an env, made with "
                              "taskgym.make, to play an agent)")
        return play_with_endpoint(env, **kwargs)
    if agent is None:
        raise ConfigError("run_episode(env, agent): give the agent that plays the env (or an "
                          "env id with base_url= and model= to play a model behind an endpoint)")
    return play_with_agent(env, agent, **kwargs)
