"""Grading a CAD episode in a fresh sandbox once the agent's is stopped, through the shared
runner (:func:`taskgym.sandbox.grading.run_grader`): the submitted script is the workspace's one
file. ``inside/grade.py`` reports ``begun``, does its own setup (CadQuery imported, the
reference read from the grader's secret, never a file anywhere, and built), reports
``started``, and only then runs the script in a child forked before any secret was read; it
kills what the script left and sends its final record (:class:`CadResult`). The report is read
by :func:`taskgym.core.sandboxed_grader.grader_outcome`: a grade that ends between the two phases gives
no verdict, a malformed report is a failed grade.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from taskgym.core.reward import RewardResult
from taskgym.core.sandboxed_grader import GraderResult, grader_outcome, grader_secret, grader_spec
from taskgym.core.task import Task, source_version
from taskgym.domains.cad.settings import CadSettings, reference_file
from taskgym.errors import ConfigError, GraderDependencyError
from taskgym.paths import read_cached, write_cached
from taskgym.sandbox import Backend, scratch_dir
from taskgym.sandbox.grading import Grader, GraderRun
from taskgym.tools.view import VIEW_BINDS, VIEW_DIR

__all__ = ["CHECK_PENALTY", "INSIDE_DIR", "INSIDE_MOUNT", "CadResult", "check_reference",
           "grade_code", "grader_of"]

INSIDE_DIR = Path(__file__).parent / "inside"
"""Scripts that run inside sandboxes (worker, grader, geometry, render)."""
INSIDE_MOUNT = "/.cad"
PRELOAD = ("geometry", "compare", "scipy.spatial")
"""What a pre-started grader imports before its grade (taskgym.sandbox.grading.warm): CadQuery with it."""
GRADER_MEMORY_MB = 2048
"""The least memory a grading sandbox has (CadQuery and the two parts)."""


CHECK_PENALTY = 0.5
"""Each failed named check multiplies the score by this: a part with the right volume but a
wrong size or wrong holes never collects the full reward."""
CHECKS_CACHE = "cad/reference-checks"
"""Where reference checks are kept (under ``cache_dir()``), by :func:`_key`, for every process."""


class CadCheck(BaseModel):
    """One named check of the part (its measures beside ``passed``)."""

    model_config = ConfigDict(frozen=True, extra="allow", strict=True)
    passed: bool


class CadResult(GraderResult):
    """``grade.py``'s final record: with ``gate``, the IoU (the grader's intersection lies
    within its union: in [0, 1]), the chamfer distance and the named checks."""

    iou: float | None = Field(default=None, ge=0.0, le=1.0)
    chamfer_mm: float | None = None
    checks: dict[str, CadCheck] | None = None
    overlap: dict[str, Any] | None = None
    properties: dict[str, Any] | None = None
    reference_properties: dict[str, Any] | None = None
    reference_fault: bool = False
    timing: dict[str, float] | None = None

    @model_validator(mode="after")
    def _gated_part_is_measured(self) -> CadResult:
        measures = (self.iou, self.chamfer_mm, self.checks, self.properties)
        if self.gate and (self.reference_properties is None or (
                None in measures and measures != (None,) * 4)):  # all four, or a reference check
            raise ValueError("a gated record has the reference's properties, and a part's has its "
                             "iou, chamfer_mm, checks and properties")
        return self


def grade_code(task: Task, code: bytes, backend: Backend) -> RewardResult:
    """Run ``code`` as the task's part in a fresh sandbox and compare it with the reference.

    ``score`` = IoU x 0.5 per failed named check (0 when the gate fails); ``success`` =
    IoU >= the threshold and every check passed.
    """
    settings = CadSettings.of(task)
    run = _grade(task, backend, code)
    outcome = grader_outcome(run, CadResult, timeout=task.limits.verifier_timeout_sec,
                             memory_mb=run_memory(task), log=2000)
    if isinstance(outcome, RewardResult):
        return outcome
    record = outcome[0]
    common: dict[str, Any] = {**run.costs(), "timing": record.timing}
    if record.reference_fault:
        write_cached(CHECKS_CACHE, _key(task, backend), {"fault": str(record.reason)})
    if record.gate and (record.iou is None or record.checks is None):
        return RewardResult.failed("the grader's report broke its vocabulary: a gated part's "
                                   "record has no iou or checks", **common)
    if not record.gate or record.iou is None or record.checks is None:
        return RewardResult.failed(str(record.reason), **common, properties=record.properties,
                                   reference_properties=record.reference_properties,
                                   reference_fault=record.reference_fault)
    iou = round(record.iou, 6)  # volumes are not exact past that; identical parts score 1
    checks = {name: check.model_dump() for name, check in record.checks.items()}
    components = {"iou": iou, "chamfer_mm": float(record.chamfer_mm or 0.0)}
    components.update({f"check_{name}": float(check.passed) for name, check in record.checks.items()})
    failed = sorted(name for name, check in record.checks.items() if not check.passed)
    success = iou >= settings.iou_threshold and not failed
    details: dict[str, Any] = {**common, "checks": checks, "properties": record.properties,
                               "reference_properties": record.reference_properties,
                               "overlap": record.overlap}
    if not success:
        details["reason"] = "; ".join(
            ([f"IoU {iou:.4f} < {settings.iou_threshold}"] if iou < settings.iou_threshold else [])
            + ([f"checks failed: {', '.join(failed)} (each halves the score)"] if failed else []))
    score = round(iou * CHECK_PENALTY ** len(failed), 6)
    return RewardResult(score=score, success=success, components=components, details=details)


def run_memory(task: Task) -> int:
    """The grading sandbox's memory cap, in MB (:func:`grader_of`'s)."""
    return max(task.limits.memory_mb, GRADER_MEMORY_MB)


def check_reference(task: Task, backend: Backend) -> None:
    """Raise :class:`ConfigError` when the task's reference is not one valid solid.

    Builds the reference in a fresh grading sandbox once per reference content, settings,
    grader code and backend; the verdict is kept on disk, so a new process reads it.
    """
    key = _key(task, backend)
    verdict = read_cached(CHECKS_CACHE, key)
    if not (isinstance(verdict, dict) and isinstance(verdict.get("fault", 0), str | None)):
        run = _grade(task, backend, None)
        outcome = grader_outcome(run, CadResult, timeout=task.limits.verifier_timeout_sec,
                                 memory_mb=run_memory(task), log=1500)
        if isinstance(outcome, RewardResult):
            if outcome.failure == "grader_dependency":
                raise GraderDependencyError(str(outcome.details.get("reason")))
            # not kept: a timeout may pass on a less loaded machine
            raise ConfigError(f"{reference_file(task)}: the reference could not be built: "
                              f"{outcome.details.get('reason')} {outcome.details.get('log', '')}")
        record = outcome[0]
        verdict = {"fault": None if record.gate else str(record.reason)}
        write_cached(CHECKS_CACHE, key, verdict)
    if verdict["fault"] is not None:
        raise ConfigError(f"{reference_file(task)}: {verdict['fault']}")


def _key(task: Task, backend: Backend) -> str:
    """The reference's bytes, the task's [cad] settings, the grader's code and the backend."""
    digest = hashlib.sha256(reference_file(task).read_bytes())
    digest.update(f"\0{CadSettings.of(task).model_dump_json()}\0{backend.name}\0".encode())
    digest.update(source_version(*sorted(INSIDE_DIR.glob("*.py")), VIEW_DIR / "gradekit.py").encode())
    return digest.hexdigest()[:32]


def _grade(task: Task, backend: Backend, code: bytes | None) -> GraderRun:
    """Run the grader on ``code``, or on the reference alone when ``None``."""
    settings = CadSettings.of(task)
    reference = reference_file(task)
    secret = {"reference_kind": reference.suffix.lstrip(".").replace("stp", "step"),
              **settings.model_dump(include={"units", "placement"}), **settings.checks.model_dump()}
    with scratch_dir() as tmp:
        if code is not None:
            (Path(tmp) / "part.py").write_bytes(code)
        return grader_of(task, check=code is None).run(
            backend, seed=Path(tmp), timeout=task.limits.verifier_timeout_sec,
            secrets=grader_secret(secret, {"reference": reference.read_bytes()}))


def grader_of(task: Task, image: str | None = None, check: bool = False) -> Grader:
    """``task``'s grader (of the reference alone when ``check``; any ``image``: taskgym's Python)."""
    settings = CadSettings.of(task)
    spec = grader_spec(task, {str(INSIDE_DIR): INSIDE_MOUNT, **VIEW_BINDS},
                       min_memory_mb=GRADER_MEMORY_MB, env={
        "TASKGYM_RUN_TIMEOUT": str(settings.run_timeout_sec),
        "TASKGYM_RUN_MEMORY_MB": str(settings.run_memory_mb),
        "TASKGYM_CHECK_REFERENCE": "1" if check else "0"})
    return Grader(spec, ("python3", "-I", "-B", f"{INSIDE_MOUNT}/grade.py"), PRELOAD)
