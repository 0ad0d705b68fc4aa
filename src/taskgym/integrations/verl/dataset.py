"""verl's side of a taskgym dataset: the parquet rows and the agent-loop file (no verl needed).

verl's ``RLHFDataset`` reads a parquet file whose rows carry the prompt (``prompt``, a list
of chat messages), the loop that plays them (``agent_name``) and free-form ``extra_info``;
the agent-loop worker hands each row's fields to the loop's ``run`` as keyword arguments
(``raw_prompt``, ``extra_info``, ``tools_kwargs``, ...). :func:`dataset_rows` makes those
rows for a taskgym env, :func:`write_dataset` writes them with pyarrow, and
:func:`write_agent_loop_config` writes the file that ``actor_rollout_ref.rollout.agent.
agent_loop_config_path`` names, so that verl's workers (Ray actors that never import
taskgym on their own) find :class:`~taskgym.integrations.verl.TaskgymAgentLoop`.

The columns (what :class:`~taskgym.integrations.verl.TaskgymAgentLoop` reads):

- ``agent_name``: ``"taskgym_agent"`` (:data:`AGENT_NAME`);
- ``prompt``: ``[{"role": "user", "content": prompt}]``; the loop appends the task's
  instruction (which ``reset`` gives) to the last user message, and puts its system prompt
  first unless the row has a system message;
- ``data_source``: ``"taskgym/<env id>"`` (verl groups its validation metrics by it);
- ``extra_info``: ``env_id``, ``task_id`` (``None``: the env draws a task, seeded by
  ``seed`` when it is set), ``seed``, ``tool_selection`` (the tools offered, by name;
  ``None``: all of the env's), ``make_kwargs`` (JSON text of the keyword arguments for
  :func:`taskgym.make`, e.g. ``{"tasks": "/path/to/tasks"}``) and ``index`` (the row's
  number, which verl reads). No ``tools_kwargs``: verl's own tools are not used (verl
  passes ``{}``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from taskgym.core.env import TaskEnv
from taskgym.core.registry import make
from taskgym.errors import ConfigError, needs_extra

__all__ = ["AGENT_NAME", "LOOP_CLASS", "dataset_rows", "write_agent_loop_config",
           "write_dataset"]

AGENT_NAME = "taskgym_agent"
"""The name the loop is registered under (the rows' ``agent_name``)."""
LOOP_CLASS = "taskgym.integrations.verl.agent_loop.TaskgymAgentLoop"
"""The loop's import path, as the agent-loop file gives it to hydra."""


def dataset_rows(env_id: str, /, *, task_ids: Sequence[str] | None = None, repeat: int = 1,
                 prompt: str = "", tool_selection: Sequence[str] | None = None,
                 seeds: Sequence[int] | None = None,
                 make_kwargs: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per task of ``env_id`` (``repeat`` times each), in task order: the tasks
    ``task_ids``, else one row per seed of ``seeds`` with no task (the env draws it), else
    the env's whole task set (a generated set's first ``size`` seeds). ``tool_selection``
    names the tools offered (checked against the env's); ``make_kwargs`` go to
    :func:`taskgym.make` in the loop (they must be JSON)."""
    if repeat < 1:
        raise ConfigError(f"repeat must be at least 1, not {repeat}")
    if task_ids is not None and seeds is not None:
        raise ConfigError("give task_ids or seeds, not both")
    kwargs = dict(make_kwargs or {})
    try:
        kwargs_text = json.dumps(kwargs, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"make_kwargs must be JSON (they travel in the parquet file): "
                          f"{exc}") from exc
    env = make(env_id, **kwargs)  # starts nothing
    try:
        unwrapped = env.unwrapped
        if not isinstance(unwrapped, TaskEnv):
            raise ConfigError(f"{env_id} is not a taskgym task env")
        names = [tool.name for tool in unwrapped.tools]
        if tool_selection is not None:
            unknown = sorted(set(tool_selection) - set(names))
            if unknown:
                raise ConfigError(f"tool_selection names tools {env_id} does not have: "
                                  f"{', '.join(unknown)} (it has {', '.join(names)})")
        if seeds is not None:
            picks: list[tuple[str | None, int | None]] = [(None, int(s)) for s in seeds]
        else:
            ids = list(task_ids) if task_ids is not None else list(unwrapped.task_set.ids())
            picks = [(str(task_id), None) for task_id in ids]
    finally:
        env.close()
    rows: list[dict[str, Any]] = []
    for task_id, seed in picks:
        for _ in range(repeat):
            rows.append({
                "data_source": f"taskgym/{env_id}",
                "agent_name": AGENT_NAME,
                "prompt": [{"role": "user", "content": prompt}],
                "extra_info": {"index": len(rows), "env_id": env_id, "task_id": task_id,
                               "seed": seed, "make_kwargs": kwargs_text,
                               "tool_selection": list(tool_selection) if tool_selection
                               is not None else None},
            })
    return rows


def write_dataset(path: str | Path, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``rows`` (from :func:`dataset_rows`, several envs' lists added together) as a
    parquet file at ``path`` for verl's ``data.train_files``; renumbers ``extra_info.index``
    across the whole file. Needs pyarrow (a dependency of verl)."""
    with needs_extra("write_dataset (parquet)", "verl"):
        import pyarrow as pa  # type: ignore[import-not-found, unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-not-found, unused-ignore]
    if not rows:
        raise ConfigError("no rows to write")
    numbered = [{**row, "extra_info": {**row["extra_info"], "index": number}}
                for number, row in enumerate(rows)]
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(numbered), target)
    return target


def write_agent_loop_config(path: str | Path, **loop_kwargs: Any) -> Path:
    """Write verl's agent-loop file (``agent_loop_config_path``) naming the taskgym loop;
    ``loop_kwargs`` become its constructor's keyword arguments (``unsubmitted``,
    ``max_invalid_turns``, ``system_prompt``, ``style``: see
    :class:`~taskgym.integrations.verl.TaskgymAgentLoop`). The file is YAML; its one entry
    is written as JSON, which YAML reads as it is."""
    entry = {"name": AGENT_NAME, "_target_": LOOP_CLASS, **loop_kwargs}
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("- " + json.dumps(entry) + "\n")
    return target
