"""The mesh domain: trimesh modelling and repair in a sandbox, graded by exact geometry."""

from taskgym.domains.mesh.env import MeshEnv
from taskgym.domains.mesh.generators import FAMILIES

__all__ = ["FAMILIES", "MeshEnv"]
