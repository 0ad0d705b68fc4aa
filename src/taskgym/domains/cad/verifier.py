"""Grading a CAD episode: the submitted script against the hidden reference, in a fresh sandbox.

The agent's sandbox is stopped before this runs. A new sandbox gets the submitted script as
its only workspace file and runs ``inside/grade.py``, which executes the script in a child,
kills whatever the script left behind, and only then reads the task settings and the
reference from a descriptor (the reference is never a file in any sandbox). The result
comes back over a pipe, tagged with a per-run nonce.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.domains.cad.settings import reference_file, settings_of
from taskgym.errors import ConfigError
from taskgym.sandbox import Backend, SandboxSpec
from taskgym.sandbox._reaper import runtime_root, session_name

__all__ = ["CHECK_PENALTY", "INSIDE_DIR", "INSIDE_MOUNT", "check_reference", "grade_code"]

INSIDE_DIR = Path(__file__).parent / "inside"
"""Scripts that run inside sandboxes (worker, grader, geometry, render)."""
INSIDE_MOUNT = "/.cad"
REPORT_LIMIT = 1 << 20


CHECK_PENALTY = 0.5
"""Each failed named check multiplies the score by this: a part with the right volume but a
wrong size or wrong holes never collects the full reward."""
_CHECKED: dict[tuple[str, str], str | None] = {}
"""Reference checks already run in this process: (task folder, digest) -> fault or ``None``."""


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
        _CHECKED[_key(task)] = str(record.get("reason"))
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

    Builds the reference in a fresh grading sandbox, once per task folder and reference
    content in this process.
    """
    key = _key(task)
    if key not in _CHECKED:
        record, _, timed_out, log = _grade(task, backend, None)
        if record is None:
            raise ConfigError(f"{reference_file(task)}: the reference could not be built "
                              f"({'timed out' if timed_out else 'no report'}): {log[-1500:]}")
        _CHECKED[key] = None if record.get("gate") else str(record.get("reason"))
    fault = _CHECKED[key]
    if fault is not None:
        raise ConfigError(f"{reference_file(task)}: {fault}")


def _key(task: Task) -> tuple[str, str]:
    reference = reference_file(task)
    digest = hashlib.sha256(reference.read_bytes() + settings_of(task).units.encode()).hexdigest()
    return str(task.path), digest


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
    nonce = secrets.token_hex(16)
    fds: list[int] = []
    try:
        nonce_r, nonce_w = os.pipe()
        fds += [nonce_r, nonce_w]
        os.write(nonce_w, nonce.encode())
        secret_file = tempfile.TemporaryFile(dir=runtime_root())
        secret_file.write(json.dumps(secret).encode() + b"\n" + reference.read_bytes())
        secret_file.flush()
        secret_file.seek(0)
        secret_fd = os.dup(secret_file.fileno())
        secret_file.close()
        fds.append(secret_fd)
        report_r, report_w = os.pipe()
        fds += [report_r, report_w]
        os.close(nonce_w)
        fds.remove(nonce_w)
        os.set_blocking(report_r, False)
        spec = SandboxSpec(
            host_python=True, memory_mb=max(limits.memory_mb, 2048), pids=limits.pids,
            disk_mb=limits.disk_mb, ro_binds={str(INSIDE_DIR): INSIDE_MOUNT},
            env={"TASKGYM_NONCE_FD": str(nonce_r), "TASKGYM_REPORT_FD": str(report_w),
                 "TASKGYM_SECRET_FD": str(secret_fd), "PYTHONDONTWRITEBYTECODE": "1",
                 "TASKGYM_RUN_TIMEOUT": str(settings.run_timeout_sec),
                 "TASKGYM_RUN_MEMORY_MB": str(settings.run_memory_mb),
                 "TASKGYM_CHECK_REFERENCE": "1" if code is None else "0"})
        with tempfile.TemporaryDirectory(prefix=session_name() + "-", dir=runtime_root()) as tmp:
            if code is not None:
                (Path(tmp) / "part.py").write_bytes(code)
            result, usage = backend.run(
                spec, ["python3", "-I", "-B", f"{INSIDE_MOUNT}/grade.py"], seed=Path(tmp),
                timeout=limits.verifier_timeout_sec, pass_fds=[nonce_r, report_w, secret_fd])
        report = _read_report(report_r)
    finally:
        for fd in fds:
            os.close(fd)
    common: dict[str, Any] = {"verifier_seconds": round(result.duration_sec, 3),
                              "verifier_cpu_seconds": round(usage.cpu_sec, 3)}
    record = _record(report, nonce)
    if record is not None:
        common["timing"] = record.get("timing")
    return record, common, result.timed_out, (result.stdout + result.stderr)[-2000:]


def _on(value: float | bool) -> float | None:
    return None if value is False else float(value)


def _read_report(fd: int) -> bytes:
    data = b""
    while len(data) < REPORT_LIMIT:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        data += chunk
    return data


def _record(report: bytes, nonce: str) -> dict[str, Any] | None:
    prefix = nonce + " "
    for line in report.decode(errors="replace").splitlines():
        if line.startswith(prefix):
            try:
                record = json.loads(line[len(prefix):])
            except json.JSONDecodeError:
                return None
            return record if isinstance(record, dict) else None
    return None
