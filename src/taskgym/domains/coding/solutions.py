"""The oracle's actions for a Harbor or Terminal-Bench task: its reference solution, laid out as
its harness does.

* Harbor (``solution/``): the whole folder is uploaded to ``/solution`` and
  ``/solution/solve.sh`` runs from the workspace ``/app`` (Harbor's OracleAgent uploads the
  folder and executes the script in the container's working directory), so a script may use
  the files beside it. ``[solution] env`` values are set, literally.
* Terminal-Bench 1 (``solution.sh``): copied to ``/oracle/solution.sh`` and run with ``bash``
  from ``/app``, as Terminal-Bench's OracleAgent does.

The files travel as a gzipped tar, base64-encoded in quoted here-documents of at most
:data:`CHUNK` characters each (one ``bash`` call per chunk), then unpacked into the empty
folder :func:`solution_mount` names, which every episode of the task has.
"""

from __future__ import annotations

import base64
import io
import shlex
import tarfile
from pathlib import Path
from typing import Any

from taskgym.core.task import Task
from taskgym.core.task_layouts import step_dir
from taskgym.errors import ConfigError

__all__ = ["CHUNK", "oracle_plan", "solution_actions", "solution_mount"]

CHUNK = 1 << 19
"""Base64 characters per upload command (an action's arguments hold at most 1,000,000)."""
_STAGING = "/tmp/.taskgym-solution.b64"
_DELIMITER = "TASKGYM_SOLUTION"  # "_" is not in the base64 alphabet: never inside a chunk


def solution_mount(task: Task) -> str:
    """Where ``task``'s harness puts the reference solution inside the sandbox."""
    return "/oracle" if task.layout == "terminal-bench-1" else "/solution"


def solution_actions(task: Task, timeout: float, step: str | None = None) -> list[dict[str, Any]]:
    """``bash`` actions that upload ``task``'s reference solution and run it (no submit); for
    ``step`` of a multi-step task, steps/<step>/solution/ when it exists, as in Harbor."""
    if task.layout == "terminal-bench-1":
        script = task.path / "solution.sh"
        if not script.is_file():
            if (task.path / "solution.yaml").is_file():
                raise ConfigError(
                    f"{task.path} has only solution.yaml (tmux keystrokes), which the taskgym "
                    "oracle cannot replay: add a solution.sh doing the same")
            raise ConfigError(f"{task.path} has no solution.sh, so the oracle cannot play it")
        files = {"solution.sh": script}
        run = "bash /oracle/solution.sh"
    else:
        folder = task.path / "solution"
        if step is not None and (step_dir(task.path, step) / "solution").is_dir():
            folder = step_dir(task.path, step) / "solution"
        script = folder / "solve.sh"
        if not script.is_file():
            raise ConfigError(
                f"{task.path} has no {script.relative_to(task.path)}, so the oracle cannot play "
                "it (Harbor's oracle runs solve.sh with the rest of its folder beside it)")
        files = {str(p.relative_to(folder)): p for p in sorted(folder.rglob("*"))}
        run = f"{_env_prefix(task)}{_interpreter(script)} /solution/solve.sh"
    mount = solution_mount(task)
    encoded = base64.b64encode(_tar(files)).decode()
    chunks = [encoded[i:i + CHUNK] for i in range(0, len(encoded), CHUNK)] or [""]
    commands = [f"cat {'>' if i == 0 else '>>'} {_STAGING} <<'{_DELIMITER}'\n{chunk}\n{_DELIMITER}"
                for i, chunk in enumerate(chunks)]
    commands[0] = f"find {mount} -mindepth 1 -delete\n" + commands[0]  # an earlier step's
    commands[-1] += (f"\nbase64 -d {_STAGING} | tar -xzf - -C {mount} && rm -f {_STAGING} "
                     f"&& (cd /app && {run})")
    return [{"tool": "bash", "args": {"command": command, "timeout": timeout}}
            for command in commands]


def oracle_plan(task: Task, timeout: float, submit: dict[str, Any]) -> list[dict[str, Any]]:
    """The oracle's whole episode: the reference solution, then the ``submit`` action; for a
    multi-step task, each step's solution followed by ``submit``."""
    if task.steps:
        return [action for step in task.steps
                for action in [*solution_actions(task, timeout, step), submit]]
    return [*solution_actions(task, timeout), submit]


def _tar(files: dict[str, Path]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, path in files.items():
            archive.add(path, arcname=name, recursive=False)
    return buffer.getvalue()


def _interpreter(script: Path) -> str:
    """The script's ``#!`` line (what executing it would run), else ``bash``."""
    with script.open("rb") as fh:
        first = fh.readline(256).decode("utf-8", "replace").strip()
    if first.startswith("#!") and first[2:].strip():
        return " ".join(shlex.quote(word) for word in first[2:].split())
    return "bash"


def _env_prefix(task: Task) -> str:
    """``env DEBIAN_FRONTEND=noninteractive K=V ... `` from ``[solution] env`` (Harbor sets
    both for the oracle); values are passed literally, never expanded from the host."""
    solution = task.config.get("solution", {})
    values = solution.get("env", {}) if isinstance(solution, dict) else {}
    if not isinstance(values, dict):
        raise ConfigError(f"{task.path / 'task.toml'}: [solution] env must be a table")
    pairs = {"DEBIAN_FRONTEND": "noninteractive", **{str(k): str(v) for k, v in values.items()}}
    bad = [k for k in pairs if not k.isidentifier()]
    if bad:
        raise ConfigError(f"{task.path / 'task.toml'}: [solution] env names {bad} are not "
                          "variable names")
    return "env " + " ".join(f"{k}={shlex.quote(v)}" for k, v in pairs.items()) + " "
