"""What the verifiers of the domains with an in-sandbox grader share (CAD, mesh, game).

:func:`grader_spec` is the fresh sandbox such a grader runs in; :func:`grader_report` is its
report, or the failed result of a grade that ran out of time or ended without one. The runner itself is
:func:`taskgym.sandbox.grading.run_grader`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.core.verdicts import grader_verdict
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.grading import GraderRun

__all__ = ["grader_report", "grader_spec"]


def grader_spec(task: Task, binds: Mapping[str, str], *, min_memory_mb: int = 0,
                image: str | None = None, env: Mapping[str, str] | None = None) -> SandboxSpec:
    """The sandbox of ``task``'s grader: the task's limits (memory at least ``min_memory_mb``),
    the host's Python (``host_python``), the domain's scripts ``binds`` read-only, ``env`` set
    and no bytecode written; ``image`` on container backends."""
    limits = task.limits
    return limits.sandbox_spec(host_python=True, memory_mb=max(limits.memory_mb, min_memory_mb),
                               ro_binds=dict(binds), image=image,
                               env={"PYTHONDONTWRITEBYTECODE": "1", **(env or {})})


def grader_report(run: GraderRun, record: dict[str, Any] | None, timeout: float,
                  log: int = 4000) -> dict[str, Any] | RewardResult:
    """The grader's report ``record`` (one of ``run.records``), or the failed result when the
    grade ran past ``timeout`` seconds or the report is missing, with the grader's cost
    (:meth:`GraderRun.costs`) and, for a missing report, the last ``log`` characters of its
    output. A grader that announces its phases (``begun``, then ``started``) and stopped
    between them gives no verdict instead (:func:`taskgym.core.verdicts.grader_verdict`)."""
    if record is None:
        verdictless = grader_verdict(run.records, timed_out=run.result.timed_out,
                                     timeout=timeout, log=run.log(log))
        if verdictless is not None:
            return verdictless
    if run.result.timed_out:
        return RewardResult.failed(f"grading ran past {timeout:g}s", **run.costs())
    if record is None:
        return RewardResult.failed("the grader ended without its report", log=run.log(log),
                                   **run.costs())
    return record
