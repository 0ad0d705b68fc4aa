"""Write a task folder that the loader reads back as written: what every generator uses.

:func:`write_task_folder` writes ``instruction.md``, ``task.toml`` (from typed values, never
from strings: the budgets as :class:`~taskgym.core.task.Limits` fields, the metadata, the
domain's own tables) and the folder's other files. It then reads ``task.toml`` back with the
loader's parser and refuses (:class:`~taskgym.errors.ConfigError`) what would not load as it was
meant: a value TOML cannot hold, budgets :class:`Limits` refuses, a table that clashes.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from taskgym.core.task import Limits
from taskgym.errors import ConfigError

__all__ = ["LIMIT_KEYS", "task_toml", "write_task_folder"]

LIMIT_KEYS: Mapping[str, tuple[str, str]] = {
    "max_steps": ("agent", "max_steps"),
    "timeout_sec": ("agent", "timeout_sec"),
    "command_timeout_sec": ("agent", "command_timeout_sec"),
    "verifier_timeout_sec": ("verifier", "timeout_sec"),
    "memory_mb": ("environment", "memory_mb"),
    "pids": ("environment", "pids"),
    "disk_mb": ("environment", "disk_mb"),
    "cpus": ("environment", "cpus"),
}
"""Where each :class:`Limits` field lives in task.toml (Harbor's tables)."""


def task_toml(*, difficulty: str = "medium", category: str = "", tags: Sequence[str] = (),
              limits: Mapping[str, Any] | None = None,
              tables: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """task.toml as data: ``[metadata]``, the budgets ``limits`` (names of :class:`Limits`
    fields, checked by it) in ``[agent]``, ``[verifier]`` and ``[environment]``, and
    ``tables``: the domain's own tables (``{"cad": {...}}``), more keys of those three, and
    top-level keys."""
    limits = dict(limits or {})
    try:
        Limits(**limits)
    except (ValidationError, TypeError) as exc:
        raise ConfigError(f"task limits {limits}: {exc}") from exc
    config: dict[str, Any] = {}
    for key, value in (tables or {}).items():
        if not isinstance(value, Mapping):
            config[key] = value  # a top-level key (Harbor's version = "1.0")
    config["metadata"] = {"difficulty": difficulty, "category": category, "tags": list(tags)}
    for key, value in limits.items():
        table, name = LIMIT_KEYS[key]
        config.setdefault(table, {})[name] = value
    for key, value in (tables or {}).items():
        if isinstance(value, Mapping):
            table = config.setdefault(key, {})
            clash = sorted(set(table) & set(value))
            if clash:
                raise ConfigError(f"[{key}] {', '.join(clash)}: given as a limit and in tables")
            table.update(value)
    return config


def write_task_folder(dest: Path, instruction: str, config: Mapping[str, Any],
                      files: Mapping[str, str | bytes] | None = None) -> None:
    """Write a task folder at ``dest`` (created if missing): ``instruction.md``, ``task.toml``
    from ``config`` (see :func:`task_toml`) and ``files`` by path relative to ``dest``
    (``solution/solve.sh``, ``tests/...``, ``environment/files/...``; text is written as
    UTF-8). Raises :class:`ConfigError` when task.toml would not read back as ``config``, or
    a path leaves ``dest``."""
    import tomli_w

    try:
        text = tomli_w.dumps(dict(config))
    except TypeError as exc:
        raise ConfigError(f"task.toml of {dest}: {exc}") from exc
    if tomllib.loads(text) != _plain(config):
        raise ConfigError(f"task.toml of {dest} would not read back as written: {config}")
    dest.mkdir(parents=True, exist_ok=True)
    everything: dict[str, str | bytes] = {"instruction.md": instruction, "task.toml": text,
                                          **(files or {})}
    for relative, content in sorted(everything.items()):
        path = PurePosixPath(relative)
        if path.is_absolute() or ".." in path.parts or not path.parts:
            raise ConfigError(f"task file {relative!r} is not a path inside the task folder")
        target = dest.joinpath(*path.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)


def _plain(value: Any) -> Any:
    """``value`` as tomllib gives it back (tuples are arrays, mappings dicts)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
