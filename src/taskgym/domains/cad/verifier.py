"""Grading a CAD episode in a fresh sandbox once the agent's is stopped, through the shared
runner (:func:`taskgym.sandbox.grading.run_grader`): the submitted script is the workspace's one
file. ``inside/grade.py`` reports ``{"phase": "begun"}``, does its own setup (CadQuery imported, the
reference read from a secret descriptor, never a file anywhere, and built), reports
``{"phase": "started"}``, and only then runs the script in a child forked before any secret was
read; it kills what the script left and reports a nonce-tagged record with ``gate``. A grade that
ends between the two phases gives no verdict (:func:`taskgym.core.verdicts.grader_verdict`).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from taskgym.core.reward import RewardResult
from taskgym.core.sandboxed_grader import grader_report, grader_spec
from taskgym.core.task import Task, source_version
from taskgym.domains.cad.settings import CadSettings, reference_file
from taskgym.errors import ConfigError, GraderDependencyError
from taskgym.paths import read_cached, write_cached
from taskgym.sandbox import Backend, scratch_dir
from taskgym.sandbox.grading import Grader, GraderRun

__all__ = ["CHECK_PENALTY", "INSIDE_DIR", "INSIDE_MOUNT", "check_reference", "grade_code", "grader_of"]

INSIDE_DIR = Path(__file__).parent / "inside"
"""Scripts that run inside sandboxes (worker, grader, geometry, render)."""
INSIDE_MOUNT = "/.cad"
PRELOAD = ("geometry", "compare", "scipy.spatial")
"""What a pre-started grader imports before its grade (taskgym.sandbox.grading.warm): CadQuery with it."""


CHECK_PENALTY = 0.5
"""Each failed named check multiplies the score by this: a part with the right volume but a
wrong size or wrong holes never collects the full reward."""
CHECKS_CACHE = "cad/reference-checks"
"""Where reference checks are kept (under ``cache_dir()``), by :func:`_key`, for every process."""


def grade_code(task: Task, code: bytes, backend: Backend) -> RewardResult:
    """Run ``code`` as the task's part in a fresh sandbox and compare it with the reference.

    ``score`` = IoU x 0.5 per failed named check (0 when the gate fails); ``success`` =
    IoU >= the threshold and every check passed.
    """
    settings = CadSettings.of(task)
    run = _grade(task, backend, code)
    record = grader_report(run, _report(run), task.limits.verifier_timeout_sec, log=2000)
    if isinstance(record, RewardResult):
        return record
    common: dict[str, Any] = {**run.costs(), "timing": record.get("timing")}
    if record.get("reference_fault"):
        write_cached(CHECKS_CACHE, _key(task, backend), {"fault": str(record.get("reason"))})
    if not record.get("gate"):
        return RewardResult.failed(str(record.get("reason")), **common,
                                   properties=record.get("properties"),
                                   reference_properties=record.get("reference_properties"),
                                   reference_fault=bool(record.get("reference_fault")))
    iou = round(float(record["iou"]), 6)  # volumes are not exact past that; identical parts score 1
    assert 0.0 <= iou <= 1.0, record  # the grader's intersection lies within its union
    checks: dict[str, Any] = record["checks"]
    components = {"iou": iou, "chamfer_mm": float(record["chamfer_mm"])}
    components.update({f"check_{name}": float(check["passed"]) for name, check in checks.items()})
    failed = sorted(name for name, check in checks.items() if not check["passed"])
    success = iou >= settings.iou_threshold and not failed
    details: dict[str, Any] = {**common, "checks": checks, "properties": record["properties"],
                               "reference_properties": record["reference_properties"],
                               "overlap": record["overlap"]}
    if not success:
        details["reason"] = "; ".join(
            ([f"IoU {iou:.4f} < {settings.iou_threshold}"] if iou < settings.iou_threshold else [])
            + ([f"checks failed: {', '.join(failed)} (each halves the score)"] if failed else []))
    score = round(iou * CHECK_PENALTY ** len(failed), 6)
    return RewardResult(score=score, success=success, components=components, details=details)


def check_reference(task: Task, backend: Backend) -> None:
    """Raise :class:`ConfigError` when the task's reference is not one valid solid.

    Builds the reference in a fresh grading sandbox once per reference content, settings,
    grader code and backend; the verdict is kept on disk, so a new process reads it.
    """
    key = _key(task, backend)
    verdict = read_cached(CHECKS_CACHE, key)
    if not (isinstance(verdict, dict) and isinstance(verdict.get("fault", 0), str | None)):
        run = _grade(task, backend, None)
        record = _report(run)
        missing = [r["dependency"] for r in run.records if isinstance(r.get("dependency"), str)]
        if missing:
            raise GraderDependencyError(missing[0])
        if record is None:  # not kept: a timeout may pass on a less loaded machine
            why = "timed out" if run.result.timed_out else "no report"
            said = "; ".join(str(r.get("dependency") or r.get("reference") or "")
                             for r in run.records).strip("; ")
            raise ConfigError(f"{reference_file(task)}: the reference could not be built ({why}): "
                              f"{said or run.log(1500)}")
        verdict = {"fault": None if record.get("gate") else str(record.get("reason"))}
        write_cached(CHECKS_CACHE, key, verdict)
    if verdict["fault"] is not None:
        raise ConfigError(f"{reference_file(task)}: {verdict['fault']}")


def _report(run: GraderRun) -> dict[str, Any] | None:
    """The grader's report (its record with ``gate``), else ``None``."""
    return next((record for record in run.records if "gate" in record), None)


def _key(task: Task, backend: Backend) -> str:
    """The reference's bytes, the task's [cad] settings, the grader's code and the backend."""
    digest = hashlib.sha256(reference_file(task).read_bytes())
    digest.update(f"\0{CadSettings.of(task).model_dump_json()}\0{backend.name}\0".encode())
    digest.update(source_version(*sorted(INSIDE_DIR.glob("*.py"))).encode())
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
            secrets={"TASKGYM_SECRET_FD": json.dumps(secret).encode() + b"\n" + reference.read_bytes()})


def grader_of(task: Task, image: str | None = None, check: bool = False) -> Grader:
    """``task``'s grader (of the reference alone when ``check``; any ``image``: taskgym's Python)."""
    settings = CadSettings.of(task)
    spec = grader_spec(task, {str(INSIDE_DIR): INSIDE_MOUNT}, min_memory_mb=2048, env={
        "TASKGYM_RUN_TIMEOUT": str(settings.run_timeout_sec),
        "TASKGYM_RUN_MEMORY_MB": str(settings.run_memory_mb),
        "TASKGYM_CHECK_REFERENCE": "1" if check else "0"})
    return Grader(spec, ("python3", "-I", "-B", f"{INSIDE_MOUNT}/grade.py"), PRELOAD)
