"""The two task-folder layouts taskgym reads, turned into :class:`~taskgym.core.task.Task` fields.

* Harbor / Terminal-Bench 2 (``layout="harbor"``): ``instruction.md``, ``task.toml``,
  ``environment/`` (``Dockerfile``, and taskgym's ``files/`` and ``setup.sh``),
  ``solution/solve.sh`` with any files beside it, ``tests/`` (``test.sh``, which writes
  ``/logs/verifier/reward.txt`` or ``reward.json``, and/or ``test_*.py``).
* Terminal-Bench 1 (``layout="terminal-bench-1"``): ``task.yaml`` (holding the instruction),
  ``solution.sh``, ``run-tests.sh``, ``tests/``, and ``Dockerfile`` at the top.

Harbor's multi-step tasks (``[[steps]]`` in task.toml) are read step by step: the task's
instruction is the first step's ``steps/<name>/instruction.md`` and :attr:`Task.steps` names
the steps in order. A top-level ``instruction.md`` of such a task is a placeholder and is
never used. Folders taskgym cannot play at all are refused with the reason
(:func:`refusal`).
"""

from __future__ import annotations

import math
import re
import tomllib
from pathlib import Path
from typing import Any

from taskgym.errors import ConfigError

__all__ = ["HARBOR", "TERMINAL_BENCH_1", "folder_layout", "read_folder", "refusal",
           "step_dir"]

HARBOR = "harbor"
TERMINAL_BENCH_1 = "terminal-bench-1"

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)
_SIZE_FACTOR = {"K": 1 / 1024, "M": 1.0, "G": 1024.0, "T": 1024.0 * 1024, "": 1.0}


def folder_layout(path: Path) -> str | None:
    """``"harbor"``, ``"terminal-bench-1"``, or ``None`` when ``path`` is no task folder."""
    if (path / "task.yaml").is_file() and not (path / "instruction.md").is_file():
        return TERMINAL_BENCH_1
    if (path / "instruction.md").is_file() or (path / "task.toml").is_file():
        return HARBOR
    return None


def refusal(path: Path) -> str | None:
    """Why taskgym cannot play the task folder ``path`` at all, or ``None`` when it may."""
    layout = folder_layout(path)
    if layout == HARBOR and not (path / "instruction.md").is_file():
        try:
            steps = tomllib.loads((path / "task.toml").read_text()).get("steps")
        except tomllib.TOMLDecodeError:
            return None  # load_task reports the syntax error itself
        if not steps:
            return f"{path} has task.toml but neither instruction.md nor [[steps]]"
    if layout != TERMINAL_BENCH_1:
        return None
    import yaml  # type: ignore[import-untyped]

    try:
        data = yaml.safe_load((path / "task.yaml").read_text())
    except yaml.YAMLError:
        return None  # load_task reports the syntax error itself
    if isinstance(data, dict) and data.get("run_tests_in_same_shell"):
        return (f"{path / 'task.yaml'} sets run_tests_in_same_shell: true (its tests read the "
                "agent's live shell), which taskgym cannot offer: it grades in a fresh sandbox "
                "after the agent's processes are gone")
    return None


def step_dir(path: Path, name: str) -> Path:
    """``steps/<name>`` of a multi-step Harbor task, refusing names that leave ``steps/``."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ConfigError(f"{path / 'task.toml'}: step name {name!r} is not one folder name")
    return path / "steps" / name


def read_folder(path: Path) -> dict[str, Any]:
    """The :class:`Task` fields of the task folder ``path`` (but ``id`` and ``domain``)."""
    layout = folder_layout(path)
    if layout is None:
        raise ConfigError(f"{path} is not a task folder: it has no instruction.md (Harbor) "
                          "and no task.yaml (Terminal-Bench 1)")
    reason = refusal(path)
    if reason is not None:
        raise ConfigError(reason)
    if layout == TERMINAL_BENCH_1:
        return _read_terminal_bench_1(path)
    return _read_harbor(path)


def _read_harbor(path: Path) -> dict[str, Any]:
    toml_path = path / "task.toml"
    config: dict[str, Any] = {}
    if toml_path.is_file():
        try:
            config = tomllib.loads(toml_path.read_text())
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{toml_path}: {exc}") from exc
    sections = {}
    for name in ("metadata", "agent", "verifier", "environment"):
        section = config.get(name, {})
        if not isinstance(section, dict):
            raise ConfigError(f"{toml_path}: [{name}] must be a table, not {section!r}")
        sections[name] = section
    meta, agent = sections["metadata"], sections["agent"]
    verifier, environment = sections["verifier"], sections["environment"]
    limits: dict[str, Any] = {}
    for key, section, name in (
        ("max_steps", agent, "max_steps"),
        ("timeout_sec", agent, "timeout_sec"),
        ("command_timeout_sec", agent, "command_timeout_sec"),
        ("verifier_timeout_sec", verifier, "timeout_sec"),
        ("pids", environment, "pids"),
        ("disk_mb", environment, "disk_mb"),
        ("cpus", environment, "cpus"),
    ):
        if name in section:
            limits[key] = section[name]
    for key, names in (("memory_mb", ("memory_mb", "memory")),
                       ("disk_mb", ("storage_mb", "storage"))):
        size = _harbor_size(toml_path, environment, *names)
        if size is not None:
            if key in limits and limits[key] != size:
                raise ConfigError(f"{toml_path}: [environment] disk_mb = {limits[key]} and "
                                  f"{names[0]} = {size} disagree; keep one")
            limits[key] = size
    steps = _harbor_steps(path, config)
    if steps:
        instruction = (step_dir(path, steps[0]) / "instruction.md").read_text()
    elif (path / "instruction.md").is_file():
        instruction = (path / "instruction.md").read_text()
    else:
        raise ConfigError(f"{path} is not a task folder: it has task.toml but no instruction.md")
    return {"instruction": instruction, "layout": HARBOR, "steps": steps,
            "difficulty": str(meta.get("difficulty", "medium")),
            "category": str(meta.get("category", "")), "tags": _tags(meta.get("tags", ())),
            "limits": limits, "config": config}


def _harbor_steps(path: Path, config: dict[str, Any]) -> tuple[str, ...]:
    """The step names of ``[[steps]]``, each checked to have its instruction and a test.sh
    (its own, or the shared tests/test.sh)."""
    toml_path = path / "task.toml"
    steps = config.get("steps") or []
    if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
        raise ConfigError(f"{toml_path}: steps must be [[steps]] tables")
    strategy = config.get("multi_step_reward_strategy")
    if strategy not in (None, "mean", "final"):
        raise ConfigError(f"{toml_path}: multi_step_reward_strategy must be \"mean\" or "
                          f"\"final\", not {strategy!r}")
    names: list[str] = []
    for step in steps:
        name = step.get("name")
        if not isinstance(name, str):
            raise ConfigError(f"{toml_path}: every [[steps]] table needs a name")
        if name in names:
            raise ConfigError(f"{toml_path}: two steps are called {name!r}")
        folder = step_dir(path, name)
        if not (folder / "instruction.md").is_file():
            raise ConfigError(f"{path} declares step {name!r} but has no "
                              f"steps/{name}/instruction.md")
        if not (folder / "tests" / "test.sh").is_file() and not (path / "tests" / "test.sh"
                                                                 ).is_file():
            raise ConfigError(f"{path}: step {name!r} has no test script (steps/{name}/tests/"
                              "test.sh or tests/test.sh)")
        threshold = step.get("min_reward")
        if threshold is not None and not (
                _number(threshold) or (isinstance(threshold, dict)
                                       and all(_number(v) for v in threshold.values()))):
            raise ConfigError(f"{toml_path}: step {name!r}: min_reward must be a number or a "
                              f"table of numbers, not {threshold!r}")
        names.append(name)
    return tuple(names)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _harbor_size(toml_path: Path, environment: dict[str, Any], mb_key: str,
                 text_key: str) -> int | None:
    """``[environment] memory_mb = 4096`` or its older spelling ``memory = "4G"``, in MB."""
    found: list[int] = []
    if mb_key in environment:
        value = environment[mb_key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise ConfigError(f"{toml_path}: [environment] {mb_key} must be a positive number "
                              f"of megabytes, not {value!r}")
        found.append(int(value))
    if text_key in environment:
        value = environment[text_key]
        match = _SIZE.match(value) if isinstance(value, str) else None
        if match is None:
            raise ConfigError(f"{toml_path}: [environment] {text_key} = {value!r} is not a size "
                              "like \"512M\" or \"4G\"")
        found.append(int(float(match[1]) * _SIZE_FACTOR[match[2].upper()]))
    if len(set(found)) > 1:
        raise ConfigError(f"{toml_path}: [environment] {mb_key} = {found[0]} and {text_key} = "
                          f"{environment[text_key]!r} ({found[1]} MB) disagree; keep one")
    return found[0] if found else None


def _read_terminal_bench_1(path: Path) -> dict[str, Any]:
    import yaml

    yaml_path = path / "task.yaml"
    try:
        data = yaml.safe_load(yaml_path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{yaml_path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{yaml_path} must hold a mapping, not {type(data).__name__}")
    instruction = data.get("instruction")
    if instruction is None:  # the oldest tasks: descriptions: [{key: base, description: ...}]
        described = {d.get("key"): d.get("description") for d in data.get("descriptions") or ()
                     if isinstance(d, dict)}
        instruction = described.get("base")
    if not isinstance(instruction, str) or not instruction.strip():
        raise ConfigError(f"{yaml_path} has no instruction")
    if not (path / "run-tests.sh").is_file():
        raise ConfigError(f"{path} is a Terminal-Bench 1 task without run-tests.sh")
    limits: dict[str, Any] = {}
    for key, name in (("timeout_sec", "max_agent_timeout_sec"),
                      ("verifier_timeout_sec", "max_test_timeout_sec")):
        value = data.get(name)
        if value is not None:
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ConfigError(f"{yaml_path}: {name} must be a number, not {value!r}")
            limits[key] = value
    return {"instruction": instruction, "layout": TERMINAL_BENCH_1,
            "difficulty": str(data.get("difficulty", "medium")),
            "category": str(data.get("category", "")), "tags": _tags(data.get("tags", ())),
            "limits": limits, "config": data}


def _tags(tags: Any) -> tuple[str, ...]:
    if isinstance(tags, str):
        return (tags,)
    return tuple(str(t) for t in tags or ())
