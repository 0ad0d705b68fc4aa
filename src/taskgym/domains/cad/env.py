"""``cad-cadquery-v0``: write a CadQuery script for a described part; geometry decides."""

from __future__ import annotations

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
from taskgym.domains.cad.generators import FAMILIES
from taskgym.domains.cad.settings import CadSettings
from taskgym.domains.cad.verifier import INSIDE_DIR, INSIDE_MOUNT, check_reference, grade_code
from taskgym.tools.view import ViewArgs

__all__ = ["PART_FILE", "CadEnv"]

PART_FILE = "part.py"
"""The submission: ``/app/part.py``. run_cadquery(code) writes it; submit grades it."""
PART_LIMIT = 1 << 20
Point = tuple[float, float, float] | None


class CodeArgs(ToolArgs):
    code: str | None = Field(default=None, description=(
        "CadQuery Python code that assigns the part to `result`; saved as /app/part.py first. "
        "Omit to use /app/part.py as it is."))


class MeasureArgs(ToolArgs):
    query: Literal["bbox", "holes", "faces", "point", "distance"] = Field(description=(
        "bbox: size, volume and centre of mass; holes: round holes (diameter, axis, depth); "
        "faces: each face's type, area, centre (and normal if planar); point: distance from "
        "`point` to the surface and whether it is inside; distance: between the surface points "
        "nearest to `point` and `point_b`."))
    point: Point = Field(default=None, description="[x, y, z] in mm")
    point_b: Point = Field(default=None, description="[x, y, z] in mm")


class CadEnv(WorkerEnv):
    """CadQuery in a sandbox with a warm worker; ``submit`` compares the part with a hidden one."""

    domain = "cad"
    description = "Write a CadQuery script for a described part; geometry (IoU) decides."
    image = "taskgym/cad-cadquery-v0"

    curated = "cad-cadquery-v0/tasks"
    generators = FAMILIES
    generate = "taskgym.domains.cad.generators:generate"
    grader = "taskgym.domains.cad.verifier:grader_of"
    local_requires = ("cadquery",)
    extra = "cad"
    grader_requirements = (Requirement("cad: cadquery", programs=("python3",),
                                       modules=("cadquery",), extra="cad"),)

    inside = INSIDE_DIR
    mount = INSIDE_MOUNT
    settings = CadSettings
    measure_needs = {"point": ("point",), "distance": ("point", "point_b")}
    worker_start_sec = 180.0
    worker_gone = ("the CadQuery worker is not running (it was stopped, for instance by a kill, "
                   "or the sandbox restarted): run_cadquery, render and measure are unavailable "
                   "for the rest of this episode; submit still grades /app/part.py")
    convention = (
        "\n\n---\nModel the part with CadQuery (`import cadquery as cq`) in millimetres and assign "
        "it to a variable named `result` (or call `show_object(part)`). `run_cadquery(code)` saves "
        "the code as /app/part.py and runs it; `render` and `measure` inspect the last part it "
        "built. `submit` grades /app/part.py (or the code you pass to it): it must build exactly "
        "one valid closed solid and nothing beside it, and is scored by its volume overlap (IoU) "
        "with the hidden reference part, halved for each failed check (overall size, round "
        "holes).\n")

    def start_episode(self, task: Task) -> None:
        check_reference(task, self.backend)  # a broken reference fails here, not at grading

    # -- tools ------------------------------------------------------------------------
    def _submitted(self, args: CodeArgs) -> ToolResult:
        self.save(PART_FILE, args.code)
        return ToolResult("submitted /app/part.py", done=True)

    def make_tools(self) -> list[Tool]:
        return [
            Tool("run_cadquery", "Save CadQuery code as /app/part.py and run it (bounded in time "
                 "and memory). Reports errors with a short traceback, else the part's solids, "
                 "validity, volume, area, bounding box, centre of mass and face/edge counts.",
                 CodeArgs, lambda args: self.run_file(PART_FILE, args.code)),
            Tool("render", "A shaded PNG of the last part built by run_cadquery (image attached), "
                 "isometric or an orthographic view with millimetre axes.",
                 ViewArgs, lambda args: self.worker_image(view=args.view)),
            Tool("measure", "Measure the last part built by run_cadquery: bounding box, round "
                 "holes, faces, distances from points ([x, y, z] in mm).", MeasureArgs, self.measure),
            *shell_tools(lambda: self.session, self.command_timeout),
            self.submit_tool("Grade /app/part.py (after saving `code` there, if given) against "
                             "the hidden reference part; ends the episode.", CodeArgs,
                             self._submitted),
        ]

    # -- grading ----------------------------------------------------------------------
    def verify(self, task: Task, session: Session) -> RewardResult:
        code = submitted_file(session, f"/app/{PART_FILE}", PART_LIMIT)
        return code if isinstance(code, RewardResult) else grade_code(task, code, self.backend)

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        code = (task.path / "solution" / "solve.py").read_text()
        return [{"tool": "submit", "args": {"code": code}}]
