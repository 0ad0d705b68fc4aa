"""Grading a CAD episode: the submitted script against the hidden reference, in a fresh sandbox.

The agent's sandbox is stopped before this runs. A new sandbox gets the submitted script as
its only workspace file and runs ``inside/grade.py``, which executes the script in a child,
kills whatever the script left behind, and only then reads the task settings and the
reference from a descriptor (the reference is never a file in any sandbox). It runs through
the shared grading runner (:func:`taskgym.sandbox.grading.run_grader`): the reference is one
of its secrets and the result a nonce-tagged record.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from taskgym.core.reward import RewardResult
from taskgym.core.task import Task, source_version
from taskgym.domains.cad.settings import reference_file, settings_of
from taskgym.errors import ConfigError
from taskgym.paths import read_cached, write_cached
from taskgym.sandbox import Backend, SandboxSpec, scratch_dir
from taskgym.sandbox.grading import run_grader

__all__ = ["CHECK_PENALTY", "INSIDE_DIR", "INSIDE_MOUNT", "check_reference", "grade_code"]

INSIDE_DIR = Path(__file__).parent / "inside"
"""Scripts that run inside sandboxes (worker, grader, geometry, render)."""
INSIDE_MOUNT = "/.cad"
PRELOAD = ("geometry", "compare", "scipy.spatial")
"""What a pre-started grader imports before its grade (taskgym.sandbox.warm): CadQuery with it."""


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
    settings = settings_of(task)
    record, common, timed_out, log = _grade(task, backend, code)
    if timed_out:
        return RewardResult.failed(f"grading ran past {task.limits.verifier_timeout_sec:g}s",
                                   **common)
    if record is None:
        return RewardResult.failed("the grader ended without its report", log=log, **common)
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
        record, _, timed_out, log = _grade(task, backend, None)
        if record is None:  # not kept: a timeout may pass on a less loaded machine
            raise ConfigError(f"{reference_file(task)}: the reference could not be built "
                              f"({'timed out' if timed_out else 'no report'}): {log[-1500:]}")
        verdict = {"fault": None if record.get("gate") else str(record.get("reason"))}
        write_cached(CHECKS_CACHE, key, verdict)
    if verdict["fault"] is not None:
        raise ConfigError(f"{reference_file(task)}: {verdict['fault']}")


def _key(task: Task, backend: Backend) -> str:
    """The reference's bytes, the task's [cad] settings, the grader's code and the backend."""
    digest = hashlib.sha256(reference_file(task).read_bytes())
    digest.update(f"\0{settings_of(task).model_dump_json()}\0{backend.name}\0".encode())
    digest.update(source_version(*sorted(INSIDE_DIR.glob("*.py"))).encode())
    return digest.hexdigest()[:32]


def _grade(task: Task, backend: Backend, code: bytes | None
           ) -> tuple[dict[str, Any] | None, dict[str, Any], bool, str]:
    """Run the grader (on ``code``, or on the reference alone when ``None``): its record,
    the common details, whether it timed out, and its log."""
    settings = settings_of(task)
    reference = reference_file(task)
    kind = reference.suffix.lstrip(".").replace("stp", "step")
    checks = settings.checks
    secret = {"reference_kind": kind, "units": settings.units, "placement": settings.placement,
              "bbox_tol_mm": _on(checks.bbox_tol_mm), "bbox_tol_rel": checks.bbox_tol_rel,
              "hole_diameter_tol_mm": _on(checks.hole_diameter_tol_mm),
              "hole_diameter_tol_rel": checks.hole_diameter_tol_rel, "holes": checks.holes}
    limits = task.limits
    spec = SandboxSpec(
        host_python=True, memory_mb=max(limits.memory_mb, 2048), pids=limits.pids,
        disk_mb=limits.disk_mb, ro_binds={str(INSIDE_DIR): INSIDE_MOUNT},
        env={"PYTHONDONTWRITEBYTECODE": "1",
             "TASKGYM_RUN_TIMEOUT": str(settings.run_timeout_sec),
             "TASKGYM_RUN_MEMORY_MB": str(settings.run_memory_mb),
             "TASKGYM_CHECK_REFERENCE": "1" if code is None else "0"})
    with scratch_dir() as tmp:
        if code is not None:
            (Path(tmp) / "part.py").write_bytes(code)
        run = run_grader(backend, spec, ["python3", "-I", "-B", f"{INSIDE_MOUNT}/grade.py"],
                         seed=Path(tmp), timeout=limits.verifier_timeout_sec,
                         secrets={"TASKGYM_SECRET_FD": json.dumps(secret).encode() + b"\n"
                                  + reference.read_bytes()}, preload=PRELOAD)
    common: dict[str, Any] = {"verifier_seconds": round(run.result.duration_sec, 3),
                              "verifier_cpu_seconds": round(run.usage.cpu_sec, 3),
                              "grader_path": run.path}
    record = run.records[0] if run.records else None
    if record is not None:
        common["timing"] = record.get("timing")
    return record, common, run.result.timed_out, run.log(2000)


def _on(value: float | bool) -> float | None:
    return None if value is False else float(value)
