"""``cad-cadquery-v0``: write a CadQuery script for a described part; geometry decides."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from taskgym.core.env import TaskEnv
from taskgym.core.reward import RewardResult, submitted_file
from taskgym.core.task import Task
from taskgym.core.tool import Tool, ToolResult
from taskgym.domains.cad.generators import FAMILIES
from taskgym.domains.cad.settings import settings_of
from taskgym.domains.cad.verifier import INSIDE_DIR, INSIDE_MOUNT, check_reference, grade_code
from taskgym.sandbox import SandboxSpec, Session
from taskgym.tools import shell_tools
from taskgym.tools.view import VIEW_BINDS
from taskgym.tools.worker import WarmWorker, image_result, reply_result

__all__ = ["PART_FILE", "CadEnv"]

ENV_ID = "cad-cadquery-v0"
PART_FILE = "part.py"
"""The submission: ``/app/part.py``. run_cadquery(code) writes it; submit grades it."""
MIN_MEMORY_MB = 2048
WORKER_START_SEC = 180.0
PART_LIMIT = 1 << 20
WORKER_GONE = ("the CadQuery worker is not running (it was stopped, for instance by a kill, "
               "or the sandbox restarted): run_cadquery, render and measure are unavailable "
               "for the rest of this episode; submit still grades /app/part.py")

_CONVENTION = (
    "\n\n---\nModel the part with CadQuery (`import cadquery as cq`) in millimetres and assign it "
    "to a variable named `result` (or call `show_object(part)`). `run_cadquery(code)` saves the "
    "code as /app/part.py and runs it; `render` and `measure` inspect the last part it built. "
    "`submit` grades /app/part.py (or the code you pass to it): it must build exactly one valid "
    "closed solid and nothing beside it, and is scored by its volume overlap (IoU) with the "
    "hidden reference part, halved for each failed check (overall size, round holes).\n")


class RunArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str | None = Field(default=None, description=(
        "CadQuery Python code that assigns the part to `result`; saved as /app/part.py. "
        "Omit to run /app/part.py as it is."))


class RenderArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    view: Literal["iso", "front", "top", "right"] = Field(default="iso", description=(
        "iso: from (+X, -Y, +Z); front: looking along +Y; top: looking down -Z; right: "
        "looking along -X."))


class MeasureArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: Literal["bbox", "holes", "faces", "point", "distance"] = Field(description=(
        "bbox: size, volume and centre of mass; holes: round holes (diameter, axis, depth); "
        "faces: each face's type, area, centre (and normal if planar); point: distance from "
        "`point` to the surface and whether it is inside; distance: between the surface points "
        "nearest to `point` and `point_b`."))
    point: tuple[float, float, float] | None = Field(default=None, description="[x, y, z] in mm")
    point_b: tuple[float, float, float] | None = Field(default=None, description="[x, y, z] in mm")


class SubmitCodeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    code: str | None = Field(default=None, description=(
        "Final CadQuery code (saved as /app/part.py first); omit to submit /app/part.py."))


class CadEnv(TaskEnv):
    """CadQuery in a sandbox with a warm worker; ``submit`` compares the part with a hidden one.

    ``tasks`` may also be ``"curated"`` (the default), ``"generated"`` (every family) or
    ``"generated:<family>[,<family>...]"``.
    """

    domain = "cad"
    description = "Write a CadQuery script for a described part; geometry (IoU) decides."
    image = "taskgym/cad-cadquery-v0"

    curated = f"{ENV_ID}/tasks"
    generators = FAMILIES
    generate = "taskgym.domains.cad.generators:generate"
    local_requires = ("cadquery",)
    extra = "cad"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._worker = WarmWorker(f"{INSIDE_MOUNT}/worker.py", ".cad-key", WORKER_GONE, WORKER_START_SEC)
        super().__init__(*args, **kwargs)

    def sandbox_spec(self, task: Task) -> SandboxSpec:
        spec = super().sandbox_spec(task)
        return spec.model_copy(update={
            "memory_mb": max(spec.memory_mb, MIN_MEMORY_MB), "host_python": True,
            "ro_binds": {str(INSIDE_DIR): INSIDE_MOUNT, **VIEW_BINDS}})

    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, str], dict[str, Any]]:
        obs, info = super().reset(seed=seed, options=options)
        assert self.task is not None
        check_reference(self.task, self.backend)  # a broken reference fails here, not at grading
        self._worker.start(self.session)  # before the agent acts: only the env holds its key
        obs = {"text": obs["text"] + _CONVENTION}
        return obs, info

    # -- tools ------------------------------------------------------------------------
    def _call_worker(self, request: dict[str, Any], timeout: float) -> dict[str, Any]:
        return self._worker.call(self.session, request, timeout, self.remaining_seconds)

    def _run_cadquery(self, args: RunArgs) -> ToolResult:
        if args.code is not None:
            self.session.write_file(PART_FILE, args.code.encode("utf-8", "surrogateescape"))
        assert self.task is not None
        settings = settings_of(self.task)
        reply = self._call_worker({"op": "run", "path": f"/app/{PART_FILE}",
                                   "memory_mb": settings.run_memory_mb}, settings.run_timeout_sec)
        return reply_result(reply, run=True)

    def _render(self, args: RenderArgs) -> ToolResult:
        return image_result(self.session, self._call_worker({"op": "render", "view": args.view}, 60))

    def _measure(self, args: MeasureArgs) -> ToolResult:
        request: dict[str, Any] = {"op": "measure", "query": args.query}
        needed = {"point": ("point",), "distance": ("point", "point_b")}.get(args.query, ())
        for key in ("point", "point_b"):
            value = getattr(args, key)
            if value is None and key in needed:
                message = f"measure {args.query!r} needs `{key}` as [x, y, z]"
                return ToolResult(f"error: {message}", error=message)
            request[key] = value
        return reply_result(self._call_worker(request, 60))

    def _submit(self, args: SubmitCodeArgs) -> ToolResult:
        if args.code is not None:
            self.session.write_file(PART_FILE, args.code.encode("utf-8", "surrogateescape"))
        return ToolResult("submitted /app/part.py", done=True)

    def make_tools(self) -> list[Tool]:
        return [
            Tool("run_cadquery", "Save CadQuery code as /app/part.py and run it (bounded in time "
                 "and memory). Reports errors with a short traceback, else the part's solids, "
                 "validity, volume, area, bounding box, centre of mass and face/edge counts.",
                 RunArgs, self._run_cadquery),
            Tool("render", "A shaded PNG of the last part built by run_cadquery (image attached), "
                 "isometric or an orthographic view with millimetre axes.",
                 RenderArgs, self._render),
            Tool("measure", "Measure the last part built by run_cadquery: bounding box, round "
                 "holes, faces, distances from points.", MeasureArgs, self._measure),
            *shell_tools(lambda: self.session, self.command_timeout),
            Tool("submit", "Grade /app/part.py (after saving `code` there, if given) against the "
                 "hidden reference part; ends the episode.", SubmitCodeArgs, self._submit),
        ]

    # -- grading ----------------------------------------------------------------------
    def verify(self, task: Task, session: Session) -> RewardResult:
        code = submitted_file(session, f"/app/{PART_FILE}", PART_LIMIT)
        return code if isinstance(code, RewardResult) else grade_code(task, code, self.backend)

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        code = (task.path / "solution" / "solve.py").read_text()
        return [{"tool": "submit", "args": {"code": code}}]
