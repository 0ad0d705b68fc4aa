"""Grading a mesh episode in a fresh sandbox (:func:`run_grader`): the submitted file is its only
workspace file, read as data by ``inside/grade.py``; the settings and the task's ``tests/`` (the
target, a scene's parts) come from a secret descriptor."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.errors import ConfigError
from taskgym.sandbox import Backend, SandboxSpec
from taskgym.sandbox.grading import run_grader

__all__ = ["BINDS", "FORMATS", "IMAGE", "MAX_BYTES", "MeshSettings", "grade_file", "settings_of"]

INSIDE_DIR = Path(__file__).parent / "inside"
BINDS = {str(INSIDE_DIR): "/.mesh"}
"""The in-sandbox scripts (worker, grader, meshlib), read-only in every sandbox of the domain."""
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


class MeshSettings(BaseModel):
    """The ``[mesh]`` table of a task.toml; every length is in millimetres."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    output: str = Field(pattern=r"^[\w.-]+\.(stl|obj|ply|off|glb)$")
    """The file ``submit`` grades when given no path, relative to /app."""
    score: Literal["iou", "hausdorff", "scene"] = "iou"
    solid: bool = True
    """The submission must be a clean closed volume (``meshlib.solid_problem``)."""
    bodies: int | None = Field(default=1, ge=1)
    max_faces: int | None = Field(default=None, ge=4)
    iou_threshold: float = Field(default=0.95, gt=0, le=1)
    hausdorff_mm: float | None = Field(default=None, gt=0)
    scene: Scene | None = None
    unlike_input: str | None = None
    """A copy of the input in ``tests/``: a submission no nearer (IoU) the target than this fails."""
    run_timeout_sec: float = Field(default=60.0, gt=0)
    run_memory_mb: int = Field(default=1024, ge=64)


def settings_of(task: Task) -> MeshSettings:
    """``task``'s ``[mesh]`` settings; :class:`ConfigError` names a bad key."""
    try:
        found = MeshSettings.model_validate(task.config.get("mesh", {}))
    except ValidationError as exc:
        raise ConfigError(f"{task.path / 'task.toml'} [mesh]: {exc}") from exc
    if (found.score == "hausdorff") != (found.hausdorff_mm is not None) or (
            found.score == "scene") != (found.scene is not None):
        raise ConfigError(f"{task.path / 'task.toml'} [mesh]: score 'hausdorff' needs hausdorff_mm "
                          "and score 'scene' a [mesh.scene] table (and only they)")
    return found


def grade_file(task: Task, name: str, data: bytes, backend: Backend,
               image: str | None = IMAGE) -> RewardResult:
    """Grade ``data``, submitted as ``name``, against ``task``'s hidden target (in ``image`` on
    container backends)."""
    settings = settings_of(task)
    tests = task.path / "tests"
    files = {str(p.relative_to(tests)): base64.b64encode(p.read_bytes()).decode()
             for p in sorted(tests.rglob("*")) if p.is_file()}
    grader = settings.model_dump(include={"score", "solid", "bodies", "max_faces",
                                          "iou_threshold", "hausdorff_mm", "unlike_input"})
    if settings.scene is not None:
        grader.update(settings.scene.model_dump())
    secret = json.dumps({"settings": grader, "files": files}).encode()
    limits = task.limits
    spec = SandboxSpec(host_python=True, memory_mb=max(limits.memory_mb, 4096), pids=limits.pids,
                       disk_mb=limits.disk_mb, ro_binds=BINDS, env={"PYTHONDONTWRITEBYTECODE": "1"},
                       image=image)
    with tempfile.TemporaryDirectory(prefix="taskgym-mesh-") as tmp:
        (Path(tmp) / name).write_bytes(data)
        run = run_grader(backend, spec, ["python3", "-I", "-B", "/.mesh/grade.py", name],
                         seed=Path(tmp), timeout=limits.verifier_timeout_sec,
                         secrets={"TASKGYM_SECRET_FD": secret},
                         preload=("meshlib", "scipy.spatial", "scipy.optimize"))
    common: dict[str, Any] = {"verifier_seconds": round(run.result.duration_sec, 3),
                              "verifier_cpu_seconds": round(run.usage.cpu_sec, 3),
                              "grader_path": run.path}
    record = run.final()
    if run.result.timed_out:
        return RewardResult.failed(f"grading ran past {limits.verifier_timeout_sec:g}s", **common)
    if record is None:
        return RewardResult.failed("the grader ended without its report", log=run.log(), **common)
    common.update(timing=record.get("timing"), properties=record.get("properties"))
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
