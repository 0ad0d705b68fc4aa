"""Agents for running and evaluating envs: oracle, null, random, scripted, OpenAI-compatible."""

from taskgym.agents.base import (
    Agent,
    NullAgent,
    OracleAgent,
    RandomAgent,
    ScriptedAgent,
    make_agent,
)
from taskgym.agents.openai_chat import OpenAIChatAgent

__all__ = [
    "Agent",
    "NullAgent",
    "OpenAIChatAgent",
    "OracleAgent",
    "RandomAgent",
    "ScriptedAgent",
    "make_agent",
]
