"""Grading a mesh episode in a fresh sandbox (:func:`run_grader`): the submitted file is its only
workspace file, read as data by ``inside/grade.py``; the settings and the task's ``tests/`` (the
target, a scene's parts) come from a secret descriptor.

The grader announces its phases (:mod:`taskgym.core.verdicts`): a grade that ends in its own
setup, after ``begun`` (its modules imported, the target or a scene's parts loaded and checked)
and before ``started`` (the submitted file opened), has no verdict: ``grader_dependency``,
``reference`` (the task's target missing, unreadable or no valid solid), ``grader_timeout`` or
``grader_crash``."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from taskgym.core.reward import RewardResult
from taskgym.core.sandboxed_grader import grader_report, grader_spec
from taskgym.core.task import Task
from taskgym.sandbox import Backend
from taskgym.sandbox.grading import Grader
from taskgym.tools.worker_env import WorkerSettings

__all__ = ["FORMATS", "IMAGE", "INSIDE_DIR", "INSIDE_MOUNT", "MAX_BYTES", "MeshSettings", "grade_file",
           "grader_of"]

INSIDE_DIR = Path(__file__).parent / "inside"
"""The in-sandbox scripts (worker, grader, meshlib), read-only in every sandbox of the domain."""
INSIDE_MOUNT = "/.mesh"
MAX_BYTES = 48 << 20
"""Largest submission graded (the grader's own bound, ``meshlib.MAX_BYTES``)."""
FORMATS = ("stl", "obj", "ply", "off", "glb")
IMAGE = "taskgym/mesh-trimesh-v0"
"""The env's container image: the agent's sandboxes and the grader's use it on docker."""


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
    spec = grader_spec(task, {str(INSIDE_DIR): INSIDE_MOUNT}, min_memory_mb=4096, image=image)
    return Grader(spec, ("python3", "-I", "-B", f"{INSIDE_MOUNT}/grade.py"),
                  ("meshlib", "scipy.spatial", "scipy.optimize", "scipy.sparse.csgraph"))


def grade_file(task: Task, name: str, data: bytes, backend: Backend,
               image: str | None = IMAGE) -> RewardResult:
    """Grade ``data``, submitted as ``name``, against ``task``'s hidden target (in ``image`` on
    container backends)."""
    settings = MeshSettings.of(task)
    tests = task.path / "tests"
    files = {str(p.relative_to(tests)): base64.b64encode(p.read_bytes()).decode()
             for p in sorted(tests.rglob("*")) if p.is_file()}
    grader = settings.model_dump(include={"score", "solid", "bodies", "max_faces",
                                          "iou_threshold", "min_feature_mm3", "hausdorff_mm",
                                          "unlike_input"})
    if settings.scene is not None:
        grader.update(settings.scene.model_dump())
    secret = json.dumps({"settings": grader, "files": files}).encode()
    limits = task.limits
    with tempfile.TemporaryDirectory(prefix="taskgym-mesh-") as tmp:
        (Path(tmp) / name).write_bytes(data)
        run = grader_of(task, image).run(backend, seed=Path(tmp), timeout=limits.verifier_timeout_sec,
                                         secrets={"TASKGYM_SECRET_FD": secret})
    record = grader_report(run, run.final(), limits.verifier_timeout_sec)
    if isinstance(record, RewardResult):
        return record
    common = {**run.costs(), "timing": record.get("timing"), "properties": record.get("properties")}
    if not record.get("gate"):
        return RewardResult.failed(str(record.get("reason")), **common)
    try:
        score = round(float(record["score"]), 6)  # volumes are not exact past that: equal meshes score 1
        measured: dict[str, Any] = dict(record["measured"])
        success = bool(record["success"])
        if not 0.0 <= score <= 1.0:
            raise ValueError(f"an impossible score {score}")
    except (KeyError, TypeError, ValueError) as exc:
        return RewardResult.failed(f"the grader's report is malformed ({exc!r})", **common)
    components = {k: float(v) for k, v in measured.items() if isinstance(v, int | float)}
    components[settings.score] = score
    details = {**common, "measured": measured, **({} if success else {"reason": record.get("reason")})}
    return RewardResult(score=score, success=success, components=components, details=details)
