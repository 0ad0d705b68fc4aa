"""What trainers that run taskgym in their own process share.

- :mod:`~taskgym.integrations.tool_methods`: one class per env id whose functions are
  exactly the env's tools, typed and documented from their JSON schemas (what TRL's
  ``environment_factory`` and ``transformers.utils.get_json_schema`` read);
- :mod:`~taskgym.integrations.tool_calls`: :func:`parse_tool_calls`, a model's text to
  taskgym actions, for the tool-call formats of today's chat templates;
- :mod:`~taskgym.integrations.chat_history`: an episode as OpenAI-format chat messages
  (``info["messages"]`` through the :class:`ChatMessages` wrapper);
- :mod:`~taskgym.integrations.endpoint_episode`: the async ``run_episode`` of a model behind
  an OpenAI-compatible endpoint, returning an :class:`EpisodeResult` (``taskgym.run_episode``
  with an env id forwards to it).
- :mod:`taskgym.integrations.trl`: TRL's ``environment_factory`` for any env id, with the
  episode policy, dataset builder and cleanup TRL needs (imported on its own: it is not
  re-exported here).
- :mod:`taskgym.integrations.verl`: verl's agent loop (``"taskgym_agent"``, one env per
  trajectory) and the parquet dataset that drives it (imported on its own, like ``trl``).
- :mod:`taskgym.integrations.skyrl`: a ``skyrl_gym`` text env for SkyRL's generator, registered
  as ``taskgym`` on import (needs the skyrl extra; not re-exported here either).

This package sits above the core: it uses taskgym's public API and core, and nothing in
the core imports it (``taskgym.parse_tool_calls`` is re-exported at the top).
"""

from taskgym.integrations.chat_history import (
    AFTER_END,
    ChatHistory,
    ChatMessages,
    template_messages,
)
from taskgym.integrations.endpoint_episode import EpisodeResult, run_episode
from taskgym.integrations.tool_calls import (
    STYLES,
    ToolCallError,
    ToolCallParse,
    ToolCallStyle,
    parse_tool_calls,
)
from taskgym.integrations.tool_methods import (
    LOST_KEYWORDS,
    NO_DESCRIPTION,
    RESERVED_NAMES,
    EnvTools,
    env_of,
    env_tools,
    tool_class,
    tool_method,
)

__all__ = [
    "AFTER_END",
    "ChatHistory",
    "ChatMessages",
    "EnvTools",
    "EpisodeResult",
    "LOST_KEYWORDS",
    "NO_DESCRIPTION",
    "RESERVED_NAMES",
    "STYLES",
    "ToolCallError",
    "ToolCallParse",
    "ToolCallStyle",
    "env_of",
    "env_tools",
    "parse_tool_calls",
    "run_episode",
    "template_messages",
    "tool_class",
    "tool_method",
]
