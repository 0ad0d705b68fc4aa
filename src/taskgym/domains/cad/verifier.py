"""Grading a CAD episode: the submitted script against the hidden reference, in a fresh sandbox.

The agent's sandbox is stopped before this runs. A new sandbox gets the submitted script as
its only workspace file and runs ``inside/grade.py``, which executes the script in a child,
kills whatever the script left behind, and only then reads the task settings and the
reference from a descriptor (the reference is never a file in any sandbox). The result
comes back over a pipe, tagged with a per-run nonce.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile
from pathlib import Path
from typing import Any

from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.domains.cad.settings import reference_file, settings_of
from taskgym.sandbox import Backend, SandboxSpec
from taskgym.sandbox._reaper import runtime_root, session_name

__all__ = ["INSIDE_DIR", "INSIDE_MOUNT", "grade_code"]

INSIDE_DIR = Path(__file__).parent / "inside"
"""Scripts that run inside sandboxes (worker, grader, geometry, render)."""
INSIDE_MOUNT = "/.cad"
REPORT_LIMIT = 1 << 20


def grade_code(task: Task, code: bytes, backend: Backend) -> RewardResult:
    """Run ``code`` as the task's part in a fresh sandbox and compare it with the reference."""
    settings = settings_of(task)
    reference = reference_file(task)
    kind = reference.suffix.lstrip(".").replace("stp", "step")
    secret = {"reference_kind": kind, "units": settings.units, "placement": settings.placement,
              "bbox_tol_mm": _on(settings.checks.bbox_tol_mm),
              "hole_diameter_tol_mm": _on(settings.checks.hole_diameter_tol_mm),
              "holes": settings.checks.holes}
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
                 "TASKGYM_RUN_MEMORY_MB": str(settings.run_memory_mb)})
        with tempfile.TemporaryDirectory(prefix=session_name() + "-", dir=runtime_root()) as tmp:
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
    if result.timed_out:
        return RewardResult.failed(f"grading ran past {limits.verifier_timeout_sec:g}s", **common)
    if record is None:
        log = (result.stdout + result.stderr)[-2000:]
        return RewardResult.failed("the grader ended without its report", log=log, **common)
    if not record.get("gate"):
        return RewardResult.failed(str(record.get("reason")), **common,
                                   properties=record.get("properties"))
    iou = round(float(record["iou"]), 6)  # volumes are not exact past that; identical parts score 1
    checks: dict[str, Any] = record["checks"]
    components = {"iou": iou, "chamfer_mm": float(record["chamfer_mm"])}
    components.update({f"check_{name}": float(check["passed"]) for name, check in checks.items()})
    failed = sorted(name for name, check in checks.items() if not check["passed"])
    success = iou >= settings.iou_threshold and not failed
    details: dict[str, Any] = {**common, "checks": checks, "properties": record["properties"]}
    if not success:
        details["reason"] = (f"IoU {iou:.4f} < {settings.iou_threshold}" if iou < settings.iou_threshold
                             else f"checks failed: {', '.join(failed)}")
    return RewardResult(score=iou, success=success, components=components, details=details)


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
