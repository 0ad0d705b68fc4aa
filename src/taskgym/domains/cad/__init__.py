"""The CAD domain (``cad-cadquery-v0``): CadQuery parts graded by geometry."""

from taskgym.domains.cad.env import PART_FILE, CadEnv
from taskgym.domains.cad.generators import FAMILIES

__all__ = ["FAMILIES", "PART_FILE", "CadEnv"]
