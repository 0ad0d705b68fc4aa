"""The ``[cad]`` table of a CAD task's task.toml, and where its hidden reference lies."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from taskgym.core.task import Task
from taskgym.errors import ConfigError
from taskgym.tools.worker_env import WorkerSettings

__all__ = ["REFERENCE_NAMES", "CadChecks", "CadSettings", "reference_file"]

REFERENCE_NAMES = ("reference.py", "reference.step", "reference.stp", "reference.stl")
"""Accepted hidden references in ``tests/``: a CadQuery script, a STEP file, a closed STL mesh."""
Tolerance = Annotated[float | None, BeforeValidator(lambda value: None if value is False else value)]
"""A check's tolerance; ``false`` in task.toml (``None`` here) turns the check off."""


class CadChecks(BaseModel):
    """Named checks that must pass, besides the IoU threshold, for success."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    bbox_tol_mm: Tolerance = Field(default=0.1, ge=0)
    """Largest allowed difference of the overall size along X, Y and Z; ``false`` turns it off."""
    bbox_tol_rel: float = Field(default=0.005, gt=0, le=1)
    """The same as a fraction of the reference's largest size; the stricter of the two applies,
    so a part 1 % too large fails at every scale."""
    hole_diameter_tol_mm: Tolerance = Field(default=0.05, ge=0)
    """Round holes must match the reference's in count per diameter, within this tolerance;
    ``false`` turns the check off."""
    hole_diameter_tol_rel: float = Field(default=0.005, gt=0, le=1)
    """The same as a fraction of the diameter; the stricter of the two applies."""
    holes: tuple[tuple[float, int], ...] | None = None
    """Expected ``[[diameter_mm, count], ...]``; by default read off the reference (needed for
    STL references, whose holes are facets, not cylinders)."""


class CadSettings(WorkerSettings):
    """How a part is built and compared; every length is in millimetres."""

    table = "cad"
    units: Literal["mm", "cm", "m", "in"] = "mm"
    """Units of the reference file; the agent always models in millimetres."""
    placement: Literal["fixed", "free"] = "fixed"
    """``fixed``: the part must sit where the instruction says. ``free``: it is moved so its
    centre of mass meets the reference's before comparing (orientation still matters)."""
    iou_threshold: float = Field(default=0.95, gt=0, le=1)
    checks: CadChecks = CadChecks()


def reference_file(task: Task) -> Path:
    """The task's one hidden reference file."""
    found = [task.path / "tests" / n for n in REFERENCE_NAMES if (task.path / "tests" / n).is_file()]
    if len(found) != 1:
        raise ConfigError(f"{task.path / 'tests'} must hold exactly one of "
                          f"{', '.join(REFERENCE_NAMES)}; found {len(found)}")
    return found[0]
