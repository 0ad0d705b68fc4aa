"""Seeded task generators for ``coding-terminal-v0``.

Each generator module exposes ``NAME``, ``DESCRIPTION`` and ``generate(seed, dest)``, which writes
one complete task folder (instruction.md, task.toml, environment/files, solution/solve.sh, tests/)
into ``dest``. The same seed always produces the same files byte for byte.
"""

from __future__ import annotations

import importlib
from pathlib import Path

__all__ = ["generate"]


def generate(name: str, seed: int, dest: Path) -> None:
    """Write task ``<name>-<seed>`` of the generator module ``name`` at ``dest``."""
    importlib.import_module(f"{__name__}.{name}").generate(seed, dest)
