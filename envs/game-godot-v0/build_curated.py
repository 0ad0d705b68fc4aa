"""Write the curated tasks of game-godot-v0: six fixed seeds (100-105) of each family, kept in
the repository so that they do not change when a family's code does.
Run: python3 envs/game-godot-v0/build_curated.py"""

import shutil
from pathlib import Path

from taskgym.domains.game.generators import FAMILIES, generate

root = Path(__file__).parent / "tasks"
shutil.rmtree(root, ignore_errors=True)
for family in FAMILIES:
    for seed in range(100, 106):
        generate(family, seed, root / f"{family}-{seed}")
