"""``mesh-trimesh-v0``: build, repair and edit triangle meshes with trimesh; geometry decides."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taskgym.core.env import TaskEnv
from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.core.tool import Tool, ToolResult
from taskgym.domains.mesh.generators import FAMILIES
from taskgym.domains.mesh.verifier import BINDS, FORMATS, IMAGE, MAX_BYTES, grade_file, settings_of
from taskgym.sandbox import SandboxSpec, Session
from taskgym.tools import shell_tools
from taskgym.tools.view import VIEW_BINDS
from taskgym.tools.worker import WarmWorker, image_result, reply_result

__all__ = ["MeshEnv"]

SCRIPT = "script.py"
MIN_MEMORY_MB = 2048
WORKER_START_SEC = 120.0
Path3 = tuple[float, float, float]

_CONVENTION = (
    "\n\n---\nWork in millimetres in /app with trimesh (manifold3d and numpy too): `run_python(code)` "
    "runs code in a warm interpreter; `inspect_mesh`, `render` and `measure` look at a mesh file (STL, "
    "OBJ, PLY, OFF or GLB). `submit(path)` grades the file (by default {output}): geometry decides.\n")
GONE = ("the trimesh worker is not running (it was stopped, for instance by a kill, or the sandbox "
        "restarted): run_python, inspect_mesh, render and measure are unavailable for the rest of "
        "this episode; submit still grades the file")


class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunArgs(Args):
    code: str | None = Field(default=None, description=(
        "Python (trimesh, manifold3d, np imported), saved as /app/script.py; omit to rerun that file."))


class PathArgs(Args):
    path: str = Field(max_length=4096, description="A mesh file in /app (.stl, .obj, .ply, .off or .glb)")


class RenderArgs(PathArgs):
    view: Literal["iso", "front", "top", "right", "bottom"] = Field(default="iso", description=(
        "iso: from (+X, -Y, +Z); front: along +Y; top: down -Z; right: along -X; bottom: up +Z."))


class MeasureArgs(PathArgs):
    query: Literal["signed_distance", "section", "distance"] = Field(description=(
        "signed_distance of `points` (positive inside) and nearest surface points; section by the "
        "plane through `origin` with `normal`; distance (chamfer, Hausdorff, overlap) to `other`."))
    points: list[Path3] | None = Field(default=None, max_length=100, description="[[x, y, z], ...] in mm")
    origin: Path3 | None = None
    normal: Path3 | None = None
    other: str | None = Field(default=None, description="a second mesh file, for `distance`")


class SubmitArgs(Args):
    path: str | None = Field(default=None, description="Mesh file to grade; omit for the task's output.")


class MeshEnv(TaskEnv):
    """trimesh in a sandbox with a warm worker; ``submit`` grades a mesh file against a hidden
    target. ``tasks`` may also be ``"curated"``, ``"generated"`` or ``"generated:<family>,..."``."""

    domain = "mesh"
    description = "Build, repair and edit triangle meshes with trimesh; exact geometry decides."
    image = IMAGE

    curated = "mesh-trimesh-v0/tasks"
    generators = FAMILIES
    generate = "taskgym.domains.mesh.generators:generate"
    requires = ("trimesh", "manifold3d", "scipy")  # to make its tasks, and in the local sandbox
    extra = "mesh"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._submitted: str | None = None
        self._worker = WarmWorker("/.mesh/worker.py", ".mesh-key", GONE, WORKER_START_SEC)
        super().__init__(*args, **kwargs)

    def workspace_seed(self, task: Task) -> Path | None:
        files = task.path / "environment" / "files"
        return files if files.is_dir() else None

    def sandbox_spec(self, task: Task) -> SandboxSpec:
        spec = super().sandbox_spec(task)
        return spec.model_copy(update={"memory_mb": max(spec.memory_mb, MIN_MEMORY_MB),
                                       "host_python": True, "ro_binds": {**BINDS, **VIEW_BINDS}})

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, str], dict[str, Any]]:
        self._submitted = None
        obs, info = super().reset(seed=seed, options=options)
        assert self.task is not None
        self._worker.start(self.session)  # before the agent acts: only the env holds its key
        return {"text": obs["text"] + _CONVENTION.format(output=settings_of(self.task).output)}, info

    def _call(self, op: str, timeout: float | None = None, **request: Any) -> dict[str, Any]:
        assert self.task is not None
        settings = settings_of(self.task)
        request.update(op=op, memory_mb=settings.run_memory_mb)
        return self._worker.call(self.session, request, timeout or settings.run_timeout_sec,
                                 self.remaining_seconds)

    def _run_python(self, args: RunArgs) -> ToolResult:
        if args.code is not None:
            self.session.write_file(SCRIPT, args.code.encode("utf-8", "surrogateescape"))
        return reply_result(self._call("run", path=f"/app/{SCRIPT}"), run=True)

    def _inspect(self, args: PathArgs) -> ToolResult:
        return reply_result(self._call("inspect", 60, path=args.path))

    def _render(self, args: RenderArgs) -> ToolResult:
        return image_result(self.session, self._call("render", 120, path=args.path, view=args.view))

    def _measure(self, args: MeasureArgs) -> ToolResult:
        needed = {"signed_distance": ("points",), "section": ("origin", "normal"),
                  "distance": ("other",)}[args.query]
        missing = [key for key in needed if getattr(args, key) is None]
        if missing:
            message = f"measure {args.query!r} needs {' and '.join(f'`{k}`' for k in missing)}"
            return ToolResult(f"error: {message}", error=message)
        request = {key: getattr(args, key) for key in ("path", "query", *needed)}
        return reply_result(self._call("measure", 120, **request))

    def _submit(self, args: SubmitArgs) -> ToolResult:
        assert self.task is not None
        self._submitted = args.path or settings_of(self.task).output
        return ToolResult(f"submitted {self._submitted}", done=True)

    def make_tools(self) -> list[Tool]:
        return [
            Tool("run_python", "Save Python code as /app/script.py and run it in a warm interpreter with "
                 "trimesh (bounded in time, memory, file size): its output or traceback.",
                 RunArgs, self._run_python),
            Tool("inspect_mesh", "Check a mesh file: watertight, winding, volume, Euler number, "
                 "bodies, volume, area, bounds, face and vertex counts, degenerate and duplicate "
                 "faces, open and non-manifold edges.", PathArgs, self._inspect),
            Tool("render", "A shaded PNG of a mesh file (image attached), isometric or orthographic with "
                 "millimetre axes; sharp and open edges drawn dark.", RenderArgs, self._render),
            Tool("measure", "Measure a mesh file: signed distances of points, a cross-section "
                 "by a plane, the distance and overlap with another mesh.", MeasureArgs, self._measure),
            *shell_tools(lambda: self.session, self.command_timeout),
            Tool("submit", "Grade a mesh file against the hidden target; ends the episode.",
                 SubmitArgs, self._submit),
        ]

    def verify(self, task: Task, session: Session) -> RewardResult:
        path = self._submitted or settings_of(task).output
        kind = PurePosixPath(path).suffix.lower().lstrip(".")
        if kind not in FORMATS:
            return RewardResult.failed(f"{path}: not a mesh file name (.{', .'.join(FORMATS)})")
        try:
            data = session.read_file(path, limit=MAX_BYTES + 1)
        except (OSError, ValueError) as exc:
            return RewardResult.failed(f"nothing to grade: {path} is missing ({exc})")
        if len(data) > MAX_BYTES:
            return RewardResult.failed(f"{path} is over the {MAX_BYTES}-byte bound of a submission")
        return grade_file(task, f"submission.{kind}", data, self.backend, self.container_image(task))

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        code = (task.path / "solution" / "solve.py").read_text()
        return [{"tool": "run_python", "args": {"code": code}}, {"tool": "submit", "args": {}}]

