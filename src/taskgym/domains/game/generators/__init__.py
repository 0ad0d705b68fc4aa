"""Seeded task families of ``game-godot-v0``: each ``generate(name, seed, dest)`` writes a task
folder: ``project/`` (the agent's /app), ``solution/`` (files that solve it), ``tests/check.gd``
(the hidden check, run by the grading harness)."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

from taskgym.core.task_folder import task_toml, write_task_folder
from taskgym.domains.game.generators.layout import lighting, scene
from taskgym.domains.game.generators.physics import physics
from taskgym.domains.game.generators.scene_text import CHECK, SETTINGS, Made
from taskgym.domains.game.generators.scripts import fix, logic

__all__ = ["FAMILIES", "generate"]

BUILDERS: dict[str, Callable[[random.Random], Made]] = {
    "scene": scene,
    "lighting": lighting,
    "physics": physics,
    "logic": logic,
    "fix": fix,
}
FAMILIES = tuple(BUILDERS)


def generate(name: str, seed: int, dest: Path) -> None:
    """Write task ``<name>-<seed>`` at ``dest``."""
    instruction, project, solution, body, frames, inputs = BUILDERS[name](random.Random(f"{name}:{seed}"))
    scripts = "logic" if name in ("logic", "fix") else "none"
    files = {f"project/{k}": v for k, v in project.items()}
    files["project/project.godot"] = SETTINGS.format(name=f"{name}-{seed}")
    files.update({f"solution/{k}": v for k, v in solution.items()})
    files["tests/check.gd"] = CHECK.format(frames=frames, inputs=inputs, body=body)
    files["instruction.md"] = (
        instruction + "\n\nThe Godot 3 project is /app (res://). Physics runs at 60 "
        "fixed frames per second; a hidden check run by the engine decides. The grader loads "
        "only .tscn, .tres and .gd files from visible folders, with its own project.godot (no "
        "autoloads, default physics)"
        + (", and this task allows no scripts" if scripts == "none" else
           "; scripts may use the node and math API on the grader's allow-list (no get_tree, "
           "OS, File, Engine, ClassDB, dynamic call/set/get)")
        + ".\n"
    )
    config = task_toml(category=name, tags=("godot",),
                       limits={"max_steps": 40, "timeout_sec": 900, "command_timeout_sec": 60,
                               "verifier_timeout_sec": 60, "memory_mb": 1024},
                       tables={"game": {"scripts": scripts}})
    write_task_folder(dest, files.pop("instruction.md"), config, files)
