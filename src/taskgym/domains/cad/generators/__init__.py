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
    (dest / "solution").mkdir(parents=True)
    (dest / "tests").mkdir()
    (dest / "instruction.md").write_text(f"# {design.title}\n\n{design.instruction.strip()}\n")
    tags = ", ".join(f'"{t}"' for t in ("cad", family, *design.tags))
    (dest / "task.toml").write_text(
        f'[metadata]\ndifficulty = "{design.difficulty}"\ncategory = "{family}"\ntags = [{tags}]\n\n'
        "[agent]\nmax_steps = 40\ntimeout_sec = 1800\n\n[verifier]\ntimeout_sec = 180\n\n"
        "[environment]\nmemory_mb = 2048\n\n"
        f'[cad]\nunits = "mm"\nplacement = "{design.placement}"\n')
    code = "import cadquery as cq\n\n" + design.code.strip() + "\n"
    (dest / "solution" / "solve.py").write_text(code)
    (dest / "tests" / "reference.py").write_text(code)


def generate(family: str, seed: int, dest: Path) -> None:
    """Write task ``<family>-<seed>`` at ``dest``."""
    module = importlib.import_module(f"taskgym.domains.cad.generators.{family}")
    write_task(module.design(random.Random(f"cad-{family}-{seed}")), dest, family)
