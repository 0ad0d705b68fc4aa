"""taskgym under verl 0.9.1: an agent loop and its dataset (docs/trainers.md "verl").

- :mod:`~taskgym.integrations.verl.dataset` (no verl needed): :func:`dataset_rows`,
  :func:`write_dataset` (parquet) and :func:`write_agent_loop_config` (the file that tells
  verl's workers where the loop is);
- :mod:`~taskgym.integrations.verl.agent_loop` (needs verl): :class:`TaskgymAgentLoop`,
  registered with verl's agent-loop registry as ``"taskgym_agent"``; reached here by name,
  imported on first use so that the dataset side works without verl.
"""

from typing import Any

from taskgym.integrations.verl.dataset import (
    AGENT_NAME,
    LOOP_CLASS,
    dataset_rows,
    write_agent_loop_config,
    write_dataset,
)

__all__ = ["AGENT_NAME", "LOOP_CLASS", "TaskgymAgentLoop", "dataset_rows",
           "write_agent_loop_config", "write_dataset"]


def __getattr__(name: str) -> Any:
    if name == "TaskgymAgentLoop":
        from taskgym.integrations.verl.agent_loop import TaskgymAgentLoop

        return TaskgymAgentLoop
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
