"""Seeded part families for ``cad-cadquery-v0``: unlimited tasks with exact references.

Each family (a module of this package, described in its docstring) exposes
``design(rng) -> Design``: the instruction, the CadQuery code that builds the part and the
task's settings. :func:`write_task` turns a design into a task folder whose hidden reference
(``tests/reference.py``) and oracle (``solution/solve.py``) are that code.
"""

from __future__ import annotations

import importlib
import random
from dataclasses import dataclass, field
from pathlib import Path

from taskgym.core.task_folder import task_toml, write_task_folder

__all__ = ["FAMILIES", "Design", "generate", "write_task"]

FAMILIES = ("bracket", "enclosure", "flange", "plate", "standoff")


@dataclass(frozen=True)
class Design:
    """One generated part."""

    title: str
    instruction: str
    code: str
    difficulty: str = "easy"
    placement: str = "fixed"
    tags: tuple[str, ...] = field(default_factory=tuple)


def write_task(design: Design, dest: Path, family: str) -> None:
    """Write ``design`` as a complete task folder at ``dest``."""
    code = "import cadquery as cq\n\n" + design.code.strip() + "\n"
    config = task_toml(difficulty=design.difficulty, category=family,
                       tags=("cad", family, *design.tags),
                       limits={"max_steps": 40, "timeout_sec": 1800, "verifier_timeout_sec": 180,
                               "memory_mb": 2048},
                       tables={"cad": {"units": "mm", "placement": design.placement}})
    write_task_folder(dest, f"# {design.title}\n\n{design.instruction.strip()}\n", config,
                      {"solution/solve.py": code, "tests/reference.py": code})


def generate(family: str, seed: int, dest: Path) -> None:
    """Write task ``<family>-<seed>`` at ``dest``."""
    module = importlib.import_module(f"taskgym.domains.cad.generators.{family}")
    write_task(module.design(random.Random(f"cad-{family}-{seed}")), dest, family)
