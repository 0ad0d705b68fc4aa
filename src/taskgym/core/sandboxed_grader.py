"""The host's end of every in-sandbox grader's report (CAD, mesh, game, coding): read in one place.

An in-sandbox grader speaks through ``taskgym/tools/inside/gradekit.py`` (its docstring has the
vocabulary): ``{"phase": "begun"}``; in its own setup, at most one ``fault`` record
(``dependency``, ``reference``, ``crash``) that ends the report; ``{"phase": "started"}``; then
``event`` records and one ``final`` record, last of all, with ``gate``, ``reason`` and the
domain's fields. :func:`read_report` checks a grade's records against that vocabulary and the
domain's models (:class:`GraderResult` and its subclasses, an event model), and
:func:`grader_outcome` turns the grade into the validated result, or the :class:`RewardResult`
to return instead:

- a grade that ended between ``begun`` and ``started`` (a fault record, a timeout, a crash) has
  no verdict (:func:`taskgym.core.verdicts.grader_verdict`);
- a malformed report (a line without the grade's nonce or not a JSON object, a record outside
  the vocabulary, missing or extra fields, wrong types, records out of order, after the final
  one, or a second final one) is a failed grade with a reason that quotes nothing of the record;
  only the grader writes before ``started`` (nothing of the policy's has run), so a report
  already malformed there is the grader's own fault (``grader_crash``, no verdict), unless the
  grade's memory peaked at its cap (the policy's copied files are charged to it);
- a grade that ran out of time, or ended without its final record, after ``started`` is the
  policy's: a failed grade.

:func:`grader_spec` is the fresh sandbox such a grader runs in, :func:`grader_secret` the one
way to hand it the task's hidden data. The runner itself is
:func:`taskgym.sandbox.grading.run_grader`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from taskgym.core.reward import FailureClass, RewardResult
from taskgym.core.task import Task
from taskgym.core.verdicts import BEGUN, STARTED, grader_verdict
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.grading import GraderRun

__all__ = ["GraderError", "GraderReport", "GraderResult", "MEMORY_FULL", "grader_outcome",
           "grader_secret", "grader_spec", "read_report"]

SECRET_FD = "TASKGYM_SECRET_FD"
MEMORY_FULL = 0.9
"""A grade whose memory peaked at this share of its cap may have been starved by the policy's
files (copied into the same memory): what ended it stays graded."""
FAULTS = ("dependency", "reference", "crash")
_SAFE_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,39}$")


class GraderError(BaseModel):
    """The grader's own failure: its type and the places it passed, never its message."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    type: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]*$", max_length=100)
    """A Python name (dotted), in ASCII: a Unicode ``\\w{0,99}`` pattern cost every process that
    imports this module about 10 MB of compiled regex."""
    at: list[str] = Field(max_length=10)


class GraderResult(BaseModel):
    """The fields of every grader's final record; a domain's model adds its own (and may
    add rules of its own)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    gate: bool
    """The work passed the grader's hard checks: the other fields measure it."""
    reason: str | None = None
    """Why the gate failed, or why the work did not succeed."""
    error: GraderError | None = None


R = TypeVar("R", bound=GraderResult)


@dataclass
class GraderReport(Generic[R]):
    """A grade's records, read: what the grader said, or why its report is malformed."""

    phases: list[str] = field(default_factory=list)
    fault: tuple[str, str] | None = None
    """The grader's own setup fault: (``dependency`` | ``reference`` | ``crash``, its reason)."""
    events: list[Any] = field(default_factory=list)
    final: R | None = None
    malformed: str | None = None
    """Why the report breaks the vocabulary (the first reason), else ``None``."""
    malformed_started: bool = False
    """Whether that break came after ``started`` (where the policy's work runs)."""


def read_report(run: GraderRun, result: type[R],
                event: type[BaseModel] | None = None) -> GraderReport[R]:
    """``run``'s records against the vocabulary, the final one validated as ``result`` and the
    events as ``event`` (a grader without events: ``None``, where any event is malformed)."""
    report: GraderReport[R] = GraderReport()
    rejected = dict(run.rejected)
    for index, record in enumerate([*run.records, None]):
        if index in rejected:
            return _malformed(report, rejected[index])
        if record is None:
            return report
        problem = _read(report, record, result, event)
        if problem is not None:
            return _malformed(report, problem)
    return report


def _malformed(report: GraderReport[R], why: str) -> GraderReport[R]:
    report.malformed = why
    report.malformed_started = STARTED in report.phases
    return report


def _read(report: GraderReport[R], record: dict[str, Any], result: type[R],
          event: type[BaseModel] | None) -> str | None:
    """Take one record into ``report``; why it is malformed, else ``None``."""
    if report.final is not None or report.fault is not None:
        return "a record after the one that ended the report"
    if "phase" in record:
        expected = BEGUN if not report.phases else STARTED if report.phases == [BEGUN] else None
        if set(record) != {"phase"} or expected is None or record["phase"] != expected:
            return "a phase record out of order or with other fields"
        report.phases.append(expected)
        return None
    if not report.phases:
        return "a record before the grader's 'begun'"
    if "fault" in record:
        kind, reason = record.get("fault"), record.get("reason")
        if set(record) != {"fault", "reason"} or kind not in FAULTS or not isinstance(reason, str):
            return "a fault record that is not {'fault': one of " + ", ".join(FAULTS) + ", 'reason': text}"
        if STARTED in report.phases:
            return "a fault record after 'started'"
        report.fault = (str(kind), reason)
        return None
    if STARTED not in report.phases:
        return "a record before the grader's 'started'"
    if "event" in record:
        if set(record) != {"event"} or event is None:
            return "an event record this grader does not send"
        try:
            report.events.append(event.model_validate(record["event"]))
        except ValidationError as exc:
            return f"an event record {_described(exc)}"
        return None
    if record.get("final") is not True:
        return "a record that is neither a phase, a fault, an event nor the final record"
    try:
        report.final = result.model_validate({k: v for k, v in record.items() if k != "final"})
    except ValidationError as exc:
        return f"the final record {_described(exc)}"
    return None


def _described(exc: ValidationError) -> str:
    """``exc``'s errors by place and kind, quoting nothing of the record (a name that is no
    plain field name is left out: it could carry a hidden value)."""
    said = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False)[:3]:
        loc = list(error["loc"])
        if error["type"] == "extra_forbidden":
            loc, what = loc[:-1], "has a field it should not have"
        else:
            what = str(error["msg"])[:120]
        place = ".".join(str(p) if isinstance(p, int) or _SAFE_NAME.match(str(p)) else "…"
                         for p in loc)
        said.append(f"{place or 'itself'}: {what}")
    return "is malformed (" + "; ".join(said) + ")"


def grader_outcome(run: GraderRun, result: type[R], *, timeout: float, memory_mb: int,
                   event: type[BaseModel] | None = None, log: int = 4000,
                   exit_code: bool = False) -> tuple[R, list[Any]] | RewardResult:
    """The grade's validated final record and events, or the result to give instead: no
    verdict (a grade that ended in its own setup, the module's docstring says when), else a
    failed grade (a malformed report, a timeout or no final record after ``started``), with the
    grade's costs (:meth:`GraderRun.costs`) and the last ``log`` characters of its output.
    ``memory_mb`` is the grade's memory cap; ``exit_code``: the grader is ``exec``'d by the
    seed-copying shell, so an exit status of 126 or 127 before ``begun`` is a missing
    interpreter (:func:`taskgym.core.verdicts.grader_verdict`)."""
    report = read_report(run, result, event)
    costs, output = run.costs(), run.log(log)
    memory_full = run.usage.peak_memory_bytes >= MEMORY_FULL * (memory_mb << 20)
    if report.malformed is not None:
        if STARTED in report.phases or not report.phases or memory_full:
            return RewardResult.failed(f"the grader's report broke its vocabulary: "
                                       f"{report.malformed}", log=output, **costs)
        return RewardResult.no_verdict(FailureClass.GRADER_CRASH, "the grader's report broke its "
                                       f"vocabulary in its own setup: {report.malformed}",
                                       log=output)
    if report.final is None:
        verdictless = grader_verdict(
            report.phases, fault=report.fault, timed_out=run.result.timed_out, timeout=timeout,
            log=output, exit_code=run.result.exit_code if exit_code else None,
            memory_full=memory_full)
        if verdictless is not None:
            return verdictless
        if run.result.timed_out:
            return RewardResult.failed(f"grading ran past {timeout:g}s", log=output, **costs)
        return RewardResult.failed("the grader ended without its final report (the process was "
                                   "killed or exited early)", log=output, **costs)
    return report.final, report.events


def grader_secret(settings: Mapping[str, Any],
                  files: Mapping[str, bytes] | None = None) -> dict[str, bytes]:
    """The ``secrets`` of :func:`~taskgym.sandbox.grading.run_grader` that hand a grader the
    task's hidden ``settings`` (JSON) and ``files`` (name -> bytes): one descriptor of an
    unlinked file, which ``gradekit.open_channel`` reads and closes before anything of the
    policy's is read (a JSON line, then the files' bytes, never re-encoded)."""
    files = dict(files or {})
    header = json.dumps({"settings": dict(settings), "files": {n: len(b) for n, b in files.items()}})
    return {SECRET_FD: b"".join([header.encode(), b"\n", *files.values()])}


def grader_spec(task: Task, binds: Mapping[str, str], *, min_memory_mb: int = 0,
                image: str | None = None, env: Mapping[str, str] | None = None) -> SandboxSpec:
    """The sandbox of ``task``'s grader: the task's limits (memory at least ``min_memory_mb``),
    the host's Python (``host_python``), the domain's scripts ``binds`` read-only (the grading
    kit's folder, :data:`taskgym.tools.view.VIEW_BINDS`, among them), ``env`` set and no
    bytecode written; ``image`` on container backends."""
    limits = task.limits
    return limits.sandbox_spec(host_python=True, memory_mb=max(limits.memory_mb, min_memory_mb),
                               ro_binds=dict(binds), image=image,
                               env={"PYTHONDONTWRITEBYTECODE": "1", **(env or {})})
