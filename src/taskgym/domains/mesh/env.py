"""``mesh-trimesh-v0``: build, repair and edit triangle meshes with trimesh; geometry decides."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import Field

from taskgym.domain import (
    Requirement,
    RewardResult,
    Session,
    Task,
    Tool,
    ToolArgs,
    ToolResult,
    WorkerEnv,
    shell_tools,
    submitted_file,
)
from taskgym.domains.mesh.generators import FAMILIES
from taskgym.domains.mesh.verifier import (
    FORMATS,
    IMAGE,
    INSIDE_DIR,
    INSIDE_MOUNT,
    MAX_BYTES,
    MeshSettings,
    grade_file,
)
from taskgym.tools.view import ViewArgs
from taskgym.tools.worker import reply_result

__all__ = ["MeshEnv"]

SCRIPT = "script.py"
Path3 = tuple[float, float, float]


class RunArgs(ToolArgs):
    code: str | None = Field(default=None, description=(
        "Python (trimesh, manifold3d, np imported), saved as /app/script.py; omit to rerun that file."))


class PathArgs(ToolArgs):
    path: str = Field(max_length=4096, description="A mesh file in /app (.stl, .obj, .ply, .off or .glb)")


class RenderArgs(PathArgs, ViewArgs):
    pass


class MeasureArgs(PathArgs):
    query: Literal["signed_distance", "section", "distance"] = Field(description=(
        "signed_distance of `points` (positive inside) and nearest surface points; section by the "
        "plane through `origin` with `normal`; distance (chamfer, Hausdorff, overlap) to `other`."))
    points: list[Path3] | None = Field(default=None, max_length=100, description="[[x, y, z], ...] in mm")
    origin: Path3 | None = None
    normal: Path3 | None = None
    other: str | None = Field(default=None, description="a second mesh file, for `distance`")


class SubmitArgs(ToolArgs):
    path: str | None = Field(default=None, description="Mesh file to grade; omit for the task's output.")


class MeshEnv(WorkerEnv):
    """trimesh in a sandbox with a warm worker; ``submit`` grades a mesh file against a hidden target."""

    domain = "mesh"
    description = "Build, repair and edit triangle meshes with trimesh; exact geometry decides."
    image = IMAGE

    curated = "mesh-trimesh-v0/tasks"
    generators = FAMILIES
    generate = "taskgym.domains.mesh.generators:generate"
    grader = "taskgym.domains.mesh.verifier:grader_of"
    requires = ("trimesh", "manifold3d", "scipy")  # to make its tasks, and in the local sandbox
    extra = "mesh"
    grader_requirements = (Requirement("mesh: trimesh, manifold3d, scipy", programs=("python3",),
                                       modules=requires, extra="mesh"),)

    inside = INSIDE_DIR
    mount = INSIDE_MOUNT
    settings = MeshSettings
    measure_needs = {"signed_distance": ("points",), "section": ("origin", "normal"), "distance": ("other",)}
    worker_gone = ("the trimesh worker is not running (it was stopped, for instance by a kill, or the "
                   "sandbox restarted): run_python, inspect_mesh, render and measure are unavailable for "
                   "the rest of this episode; submit still grades the file")
    convention = (
        "\n\n---\nWork in millimetres in /app with trimesh (manifold3d and numpy too): `run_python(code)` "
        "runs code in a warm interpreter; `inspect_mesh`, `render` and `measure` look at a mesh file (STL, "
        "OBJ, PLY, OFF or GLB). `submit(path)` grades the file (by default {output}): geometry decides.\n")

    def workspace_seed(self, task: Task) -> Path | None:
        files = task.path / "environment" / "files"
        return files if files.is_dir() else None

    def submitted_path(self, task: Task) -> str:
        """The file ``submit`` named, else the task's output."""
        return getattr(self.submission, "path", None) or MeshSettings.of(task).output

    def _submitted(self, _args: SubmitArgs) -> ToolResult:
        assert self.task is not None
        return ToolResult(f"submitted {self.submitted_path(self.task)}", done=True)

    def make_tools(self) -> list[Tool]:
        return [
            Tool("run_python", "Save Python code as /app/script.py and run it in a warm interpreter with "
                 "trimesh (bounded in time, memory, file size): its output or traceback.",
                 RunArgs, lambda args: self.run_file(SCRIPT, args.code)),
            Tool("inspect_mesh", "Check a mesh file: watertight, winding, volume, Euler number, "
                 "bodies, volume, area, bounds, face and vertex counts, degenerate and duplicate "
                 "faces, open and non-manifold edges.", PathArgs,
                 lambda args: reply_result(self.call_worker("inspect", 60, path=args.path))),
            Tool("render", "A shaded PNG of a mesh file (image attached), isometric or orthographic with "
                 "millimetre axes; sharp and open edges drawn dark.", RenderArgs,
                 lambda args: self.worker_image(path=args.path, view=args.view)),
            Tool("measure", "Measure a mesh file: signed distances of points, a cross-section "
                 "by a plane, the distance and overlap with another mesh.", MeasureArgs, self.measure),
            *shell_tools(lambda: self.session, self.command_timeout),
            self.submit_tool("Grade a mesh file against the hidden target; ends the episode.",
                             SubmitArgs, self._submitted),
        ]

    def verify(self, task: Task, session: Session) -> RewardResult:
        path = self.submitted_path(task)
        kind = PurePosixPath(path).suffix.lower().lstrip(".")
        if kind not in FORMATS:
            return RewardResult.failed(f"{path}: not a mesh file name (.{', .'.join(FORMATS)})")
        data = submitted_file(session, path, MAX_BYTES)
        if isinstance(data, RewardResult):
            return data
        return grade_file(task, f"submission.{kind}", data, self.backend, self.container_image(task))

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        code = (task.path / "solution" / "solve.py").read_text()
        return [{"tool": "run_python", "args": {"code": code}}, {"tool": "submit", "args": {}}]

