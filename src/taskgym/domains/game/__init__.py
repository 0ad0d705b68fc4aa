"""The game domain (``game-godot-v0``): Godot 3 scenes and scripts, graded by the engine."""

from taskgym.domains.game.env import GameEnv
from taskgym.domains.game.generators import FAMILIES

__all__ = ["FAMILIES", "GameEnv"]
