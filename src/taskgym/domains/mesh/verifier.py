"""Grading a mesh episode in a fresh sandbox (:func:`run_grader`): the submitted file is its only
workspace file, read as data by ``inside/grade.py``; the settings and the task's ``tests/`` (the
target, a scene's parts) come from a secret descriptor.

The grader announces its phases (:mod:`taskgym.core.verdicts`): a grade that ends in its own
setup, after ``begun`` (its modules imported, the target or a scene's parts loaded and checked)
and before ``started`` (the submitted file opened), has no verdict: ``grader_dependency``,
``reference`` (the task's target missing, unreadable or no valid solid), ``grader_timeout`` or
``grader_crash``. Its final record is a :class:`MeshResult`, read by
:func:`taskgym.core.sandboxed_grader.grader_outcome` (a malformed report is a failed grade)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from taskgym.core.reward import RewardResult
from taskgym.core.sandboxed_grader import GraderResult, grader_outcome, grader_secret, grader_spec
from taskgym.core.task import Task
from taskgym.sandbox import Backend
from taskgym.sandbox.grading import Grader
from taskgym.tools.view import VIEW_BINDS
from taskgym.tools.worker_env import WorkerSettings

__all__ = ["FORMATS", "IMAGE", "INSIDE_DIR", "INSIDE_MOUNT", "MAX_BYTES", "MeshResult", "MeshSettings",
           "grade_file", "grader_of"]

INSIDE_DIR = Path(__file__).parent / "inside"
"""The in-sandbox scripts (worker, grader, meshlib), read-only in every sandbox of the domain."""
INSIDE_MOUNT = "/.mesh"
MAX_BYTES = 48 << 20
"""Largest submission graded (the grader's own bound, ``meshlib.MAX_BYTES``)."""
FORMATS = ("stl", "obj", "ply", "off", "glb")
IMAGE = "taskgym/mesh-trimesh-v0"
"""The env's container image: the agent's sandboxes and the grader's use it on docker."""
GRADER_MEMORY_MB = 4096
"""The least memory a grading sandbox has."""


class MeshResult(GraderResult):
    """``grade.py``'s final record: with ``gate``, the score in [0, 1], success and the
    measures."""

    score: float | None = Field(default=None, ge=0.0, le=1.0)
    success: bool = False
    measured: dict[str, Any] | None = None
    properties: dict[str, Any] | None = None
    timing: dict[str, float] | None = None

    @model_validator(mode="after")
    def _gated_mesh_is_scored(self) -> MeshResult:
        if self.gate and (self.score is None or self.measured is None):
            raise ValueError("a gated mesh's record has its score and measures")
        return self


class Scene(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    parts: dict[str, str]
    """Part name: its mesh in the task's ``tests/`` (the agent gets a copy in its workspace)."""
    floor_z: float = 0.0
    relations: tuple[tuple[str, str, str] | tuple[str, str, str, float], ...] = ()
    """``[kind, a, b(, value)]``: ``left_of``, ``behind``, ``on`` (a stands on b), ``gap_x``."""


class MeshSettings(WorkerSettings):
    """The ``[mesh]`` table of a task.toml; every length is in millimetres."""

    table = "mesh"
    output: str = Field(pattern=r"^[\w.-]+\.(stl|obj|ply|off|glb)$")
    """The file ``submit`` grades when given no path, relative to /app."""
    score: Literal["iou", "hausdorff", "scene"] = "iou"
    solid: bool = True
    """The submission must be a clean closed volume (``meshlib.solid_problem``)."""
    bodies: int | None = Field(default=1, ge=1)
    max_faces: int | None = Field(default=None, ge=4)
    iou_threshold: float = Field(default=0.95, gt=0, le=1)
    """The least IoU that succeeds; the grader raises it for each task (see ``min_feature_mm3``)."""
    min_feature_mm3: float | None = Field(default=None, gt=0)
    """The volume of the task's smallest feature (a hole, a boss, a slot): success then needs an
    IoU above what a part missing that feature scores, whatever ``iou_threshold`` says. The
    grader also keeps success above what the target's bounding box and convex hull score, and
    asks for the target's topology (bodies, cavities, genus)."""
    hausdorff_mm: float | None = Field(default=None, gt=0)
    scene: Scene | None = None
    unlike_input: str | None = None
    """A copy of the input in ``tests/``: a submission no nearer (IoU) the target than this fails."""

    @model_validator(mode="after")
    def _score_has_its_table(self) -> MeshSettings:
        if (self.score == "hausdorff") != (self.hausdorff_mm is not None) or (
                self.score == "scene") != (self.scene is not None):
            raise ValueError("score 'hausdorff' needs hausdorff_mm and score 'scene' a [mesh.scene] "
                             "table (and only they)")
        return self


def grader_of(task: Task, image: str | None = IMAGE) -> Grader:
    """``task``'s grader (in ``image`` on container backends); the submission is its workspace."""
    spec = grader_spec(task, {str(INSIDE_DIR): INSIDE_MOUNT, **VIEW_BINDS},
                       min_memory_mb=GRADER_MEMORY_MB, image=image)
    return Grader(spec, ("python3", "-I", "-B", f"{INSIDE_MOUNT}/grade.py"),
                  ("meshlib", "scipy.spatial", "scipy.optimize", "scipy.sparse.csgraph"))


def grade_file(task: Task, name: str, data: bytes, backend: Backend,
               image: str | None = IMAGE) -> RewardResult:
    """Grade ``data``, submitted as ``name``, against ``task``'s hidden target (in ``image`` on
    container backends)."""
    settings = MeshSettings.of(task)
    tests = task.path / "tests"
    files = {str(p.relative_to(tests)): p.read_bytes() for p in sorted(tests.rglob("*")) if p.is_file()}
    grader = settings.model_dump(include={"score", "solid", "bodies", "max_faces",
                                          "iou_threshold", "min_feature_mm3", "hausdorff_mm",
                                          "unlike_input"})
    if settings.scene is not None:
        grader.update(settings.scene.model_dump())
    limits = task.limits
    with tempfile.TemporaryDirectory(prefix="taskgym-mesh-") as tmp:
        (Path(tmp) / name).write_bytes(data)
        run = grader_of(task, image).run(backend, seed=Path(tmp), timeout=limits.verifier_timeout_sec,
                                         secrets=grader_secret(grader, files))
    outcome = grader_outcome(run, MeshResult, timeout=limits.verifier_timeout_sec,
                             memory_mb=max(limits.memory_mb, GRADER_MEMORY_MB))
    if isinstance(outcome, RewardResult):
        return outcome
    record = outcome[0]
    common = {**run.costs(), "timing": record.timing, "properties": record.properties}
    if not record.gate or record.score is None or record.measured is None:
        return RewardResult.failed(str(record.reason), **common)
    score = round(record.score, 6)  # volumes are not exact past that: equal meshes score 1
    components = {k: float(v) for k, v in record.measured.items()
                  if isinstance(v, int | float)}
    components[settings.score] = score
    details = {**common, "measured": record.measured,
               **({} if record.success else {"reason": record.reason})}
    return RewardResult(score=score, success=record.success, components=components, details=details)
