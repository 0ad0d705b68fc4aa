"""Every domain's host reader of its grader's report: a malformed report is a failed grade.

The reports are made here, not by a grader (the grade's run is replaced, so no sandbox runs):
each domain's valid report first (it must score 1, else the checks below prove nothing), then
that report broken in one way (hypothesis chooses the way, the field and the place): a line
without the nonce, not JSON or cut short, a missing, extra or mistyped field, a record after
the final one, two final ones, a fault or a phase out of place, a record outside the
vocabulary. Where the policy could have caused it (after ``started``, or before ``begun``)
it is a graded 0 whose reason quotes nothing of the record; in the grader's own setup (after
``begun``, before ``started``: only the grader writes there) it has no verdict
(``grader_crash``), as docs/security.md's table places it. Arbitrary records never raise.
"""

from __future__ import annotations

import copy
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskgym.core.reward import RewardResult
from taskgym.core.sandboxed_grader import GraderResult, grader_outcome, grader_secret, read_report
from taskgym.core.task import Task, load_task
from taskgym.domains.cad import verifier as cad_verifier
from taskgym.domains.coding import verifier as coding_verifier
from taskgym.domains.game import verifier as game_verifier
from taskgym.domains.mesh import verifier as mesh_verifier
from taskgym.paths import envs_dir
from taskgym.sandbox.base import ExecResult, ResourceUsage
from taskgym.sandbox.grading import Grader, GraderRun
from taskgym.tools.view import VIEW_DIR

SECRET = "SECRET-7f3a"
"""Planted in every broken record: it must never reach the result."""
BEGUN, STARTED = {"phase": "begun"}, {"phase": "started"}
REJECTED = ("a line without the grade's nonce", "a line that is not JSON", "a line cut short",
            "a line that is not a JSON object", "the report ran past 4 MB")


class Domain:
    """One domain's host reader, fed ``records`` (and rejected lines) instead of a grade."""

    def __init__(self, name: str, task: Task, events: list[dict[str, Any]], final: dict[str, Any],
                 required: tuple[str, ...]) -> None:
        self.name, self.task, self.events, self.final, self.required = name, task, events, final, required

    def valid(self) -> list[dict[str, Any]]:
        return [BEGUN, STARTED, *({"event": e} for e in self.events), {"final": True, **self.final}]

    def grade(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, records: list[dict[str, Any]],
              rejected: list[tuple[int, str]]) -> RewardResult:
        def run(*_: Any, **__: Any) -> GraderRun:
            return GraderRun(ExecResult(stdout="", stderr="", exit_code=0, duration_sec=0.1),
                             ResourceUsage(), copy.deepcopy(records), list(rejected))

        with monkeypatch.context() as patch:
            patch.setattr(Grader, "run", run)
            patch.setattr(game_verifier, "run_grader", run)
            patch.setattr(coding_verifier, "run_grader", run)
            if self.name == "cad":
                return cad_verifier.grade_code(self.task, b"", Backendless())
            if self.name == "mesh":
                return mesh_verifier.grade_file(self.task, "part.stl", b"", Backendless())
            if self.name == "game":
                return game_verifier.grade_project(self.task, Exporting(), Backendless(), None)  # type: ignore[arg-type]
            workspace = tmp_path / "workspace"
            workspace.mkdir(exist_ok=True)
            return coding_verifier.grade_workspace(self.task, workspace, Backendless())  # type: ignore[arg-type]


class Backendless:
    """Stands for the backend: the grade's run is replaced, so nothing asks it anything."""

    name = "none"


class Exporting:
    """Stands for the agent's session of a game episode: its workspace, an empty folder."""

    def export_workspace(self, path: Path) -> None:
        path.mkdir(parents=True)


def _task(env: str, name: str, domain: str) -> Task:
    return load_task(envs_dir() / env / "tasks" / name, domain)


def _domains() -> list[Domain]:
    game = _task("game-godot-v0", "fix-100", "game")
    name = sorted(game_verifier.check_names(game_verifier.check_source(game)))[0]
    coding = _task("coding-terminal-v0", "py-impl-money", "coding")
    expected = coding.config.get("verifier", {}).get("expected_tests", 1)
    tests = [f"tests/test_money.py::test_{i}" for i in range(expected)]
    return [
        Domain("cad", _task("cad-cadquery-v0", "plate-four-holes", "cad"), [], {
            "gate": True, "reason": None, "iou": 1.0, "chamfer_mm": 0.0,
            "checks": {"bbox": {"passed": True, "size": [1, 2, 3]}}, "overlap": {},
            "properties": {"volume": 1.0}, "reference_properties": {"volume": 1.0},
            "timing": {"import_sec": 0.1}}, ("gate", "iou", "checks")),
        Domain("mesh", _task("mesh-trimesh-v0", "block-with-boss", "mesh"), [], {
            "gate": True, "reason": None, "score": 1.0, "success": True,
            "measured": {"iou": 1.0}, "properties": {}, "timing": {"grade_sec": 0.1}},
            ("gate", "score", "measured")),
        Domain("game", game, [], {"gate": True, "reason": None, "cause": None, "log": "",
                                  "seconds": 0.5, "checks": [{"name": name, "passed": True}]},
               ("gate",)),
        Domain("coding", coding, [{"collected": expected}, *({"test": t, "passed": True} for t in tests)],
               {"gate": True, "reason": None, "exit": 0, "tampered": []}, ("gate", "exit", "tampered")),
    ]


DOMAINS = _domains()
IDS = [d.name for d in DOMAINS]

# -- the ways to break a report: each gives (records, rejected lines, where it broke) --------
# where: "setup" (after begun, before started: the grader's own), else the policy's reach
Break = Callable[[Domain, st.DataObject], tuple[list[dict[str, Any]], list[tuple[int, str]], str]]
JUNK = st.one_of(st.just(SECRET), st.integers(), st.floats(allow_nan=True), st.none(),
                 st.lists(st.just(SECRET), max_size=2),
                 st.dictionaries(st.just(SECRET), st.integers(), max_size=1))


def _final(records: list[dict[str, Any]]) -> dict[str, Any]:
    return records[-1]


def rejected_line(domain: Domain, data: st.DataObject) -> tuple[Any, Any, str]:
    records = domain.valid()
    at = data.draw(st.integers(0, len(records)), label="before record")
    return records, [(at, data.draw(st.sampled_from(REJECTED)))], "setup" if at == 1 else "work"


def missing_field(domain: Domain, data: st.DataObject) -> tuple[Any, Any, str]:
    records = domain.valid()
    del _final(records)[data.draw(st.sampled_from(domain.required))]
    return records, [], "work"


def extra_field(domain: Domain, data: st.DataObject) -> tuple[Any, Any, str]:
    records = domain.valid()
    _final(records)[data.draw(st.sampled_from([SECRET, "extra", "ok"]))] = data.draw(JUNK)
    return records, [], "work"


def wrong_type(domain: Domain, data: st.DataObject) -> tuple[Any, Any, str]:
    records = domain.valid()
    field = data.draw(st.sampled_from(domain.required))
    _final(records)[field] = data.draw(st.sampled_from([SECRET, 12.5, None]))  # wrong for each
    return records, [], "work"


def after_the_final(domain: Domain, data: st.DataObject) -> tuple[Any, Any, str]:
    records = domain.valid()
    extra = data.draw(st.sampled_from([BEGUN, STARTED, {"final": True, **domain.final},
                                       {"fault": "dependency", "reason": SECRET}, {SECRET: 1}]))
    return [*records, extra], [], "work"


def out_of_place(domain: Domain, data: st.DataObject) -> tuple[Any, Any, str]:
    records = domain.valid()
    record = data.draw(st.sampled_from([
        BEGUN, STARTED, {"phase": SECRET}, {"phase": "started", SECRET: 1},
        {"fault": "dependency", "reason": SECRET}, {"fault": "reference", "reason": SECRET},
        {"fault": SECRET, "reason": "x"}, {SECRET: True}, {"event": {SECRET: 1}},
        {"final": SECRET}]))
    at = data.draw(st.integers(1, len(records) - 1), label="before record")
    if record == STARTED and at == 1:
        at = 2  # started then started: broken after started
    if record.get("fault") in ("dependency", "reference") and set(record) == {"fault", "reason"} and at == 1:
        at = 2  # a fault before started is the grader's own, not a break: placed after it
    where = "setup" if at == 1 else "work"
    return [*records[:at], record, *records[at:]], [], where


def final_before_started(domain: Domain, data: st.DataObject) -> tuple[Any, Any, str]:
    return [BEGUN, {"final": True, **domain.final}], [], "setup"


BREAKS: list[Break] = [rejected_line, missing_field, extra_field, wrong_type, after_the_final,
                       out_of_place, final_before_started]


@pytest.mark.parametrize("domain", DOMAINS, ids=IDS)
def test_the_valid_report_scores_one(domain: Domain, monkeypatch: pytest.MonkeyPatch,
                                     tmp_path: Path) -> None:
    result = domain.grade(monkeypatch, tmp_path, domain.valid(), [])
    assert result.graded and result.score == 1.0 and result.success, result


@pytest.mark.parametrize("domain", DOMAINS, ids=IDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_malformed_report_is_a_failed_grade(domain: Domain, monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path, data: st.DataObject) -> None:
    broken = data.draw(st.sampled_from(BREAKS), label="break")
    records, rejected, where = broken(domain, data)
    result = domain.grade(monkeypatch, tmp_path, records, rejected)
    assert SECRET not in repr(result)
    if where == "setup":  # only the grader wrote there: its own fault
        assert (result.verdict, result.failure) == ("none", "grader_crash"), result
        assert "in its own setup" in result.details["reason"]
    else:
        assert result.graded and result.score == 0.0 and not result.success, result
        assert "broke its vocabulary" in result.details["reason"], result


RECORD = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                      lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
FIELDS = st.sampled_from(["phase", "fault", "reason", "event", "final", "gate", "checks", "exit",
                          "tampered", "iou", "score", "measured", "begun", "started"])


@pytest.mark.parametrize("domain", DOMAINS, ids=IDS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(st.dictionaries(FIELDS | st.text(max_size=6), RECORD, max_size=4), max_size=6),
       rejected=st.lists(st.tuples(st.integers(0, 6), st.sampled_from(REJECTED)), max_size=2))
def test_arbitrary_records_never_raise(domain: Domain, monkeypatch: pytest.MonkeyPatch,
                                       tmp_path: Path, records: list[dict[str, Any]],
                                       rejected: list[tuple[int, str]]) -> None:
    result = domain.grade(monkeypatch, tmp_path, records, sorted(rejected))
    assert isinstance(result, RewardResult) and 0.0 <= result.score <= 1.0


# -- the two ends agree: what the kit writes, the host reads ----------------------------------
def kit() -> Any:
    sys.path.insert(0, str(VIEW_DIR))
    try:
        import gradekit
    finally:
        sys.path.remove(str(VIEW_DIR))
    return gradekit


def lines_of(send: Callable[[Any], None]) -> GraderRun:
    """The run of a grade whose kit channel ``send`` wrote to, as the host's reader gets it."""
    read, write = os.pipe()
    channel = kit().Channel("n" * 32, write)
    channel.begun()
    send(channel)
    channel.close()
    records: list[dict[str, Any]] = []
    rejected: list[tuple[int, str]] = []
    with os.fdopen(read, "rb") as report:
        for line in report:
            prefix, _, body = line.partition(b" ")
            assert prefix == b"n" * 32
            records.append(json.loads(body))
    return GraderRun(ExecResult(stdout="", stderr="", exit_code=0, duration_sec=0.1),
                     ResourceUsage(), records, rejected)


def test_the_kits_records_are_the_hosts_vocabulary() -> None:
    def grade(channel: Any) -> None:
        channel.started()
        channel.event(collected=1)
        channel.event(test="t::a", passed=True)
        channel.final(True, exit=0, tampered=[])
        with pytest.raises(RuntimeError, match="already ended"):
            channel.final(True, exit=0, tampered=[])

    report = read_report(lines_of(grade), coding_verifier.CodingResult, coding_verifier.TestEvent)
    assert report.malformed is None and report.phases == ["begun", "started"], report
    assert report.final is not None and report.final.exit == 0 and len(report.events) == 2


@pytest.mark.parametrize("started", [False, True], ids=["in-setup", "after-started"])
def test_the_kit_reports_its_graders_failure_by_type_and_place(started: bool) -> None:
    def grade(channel: Any) -> None:
        if started:
            channel.started()
        try:
            {}[SECRET]
        except KeyError as exc:
            channel.failed(exc)

    run = lines_of(grade)
    assert SECRET not in json.dumps(run.records)
    outcome = grader_outcome(run, GraderResult, timeout=10, memory_mb=100)
    assert SECRET not in repr(outcome)
    if started:  # a final record that fails the gate: the domain grades it 0
        assert not isinstance(outcome, RewardResult) and not outcome[0].gate, outcome
        assert outcome[0].error is not None and outcome[0].error.type == "KeyError"
        reason = str(outcome[0].reason)
    else:
        assert isinstance(outcome, RewardResult)
        assert (outcome.verdict, outcome.failure) == ("none", "grader_crash")
        reason = outcome.details["reason"]
    assert "KeyError at test_grader_reports.py:" in reason, outcome


def test_the_one_secret_unpacks_as_it_was_packed() -> None:
    files = {"target.stl": b"solid\n\x00\xff", "empty": b"", "part.txt": b"{\"not\": \"json\"}\n"}
    (packed,) = grader_secret({"score": "iou", "n": [1, 2]}, files).values()
    secret = kit().Secret.unpack(packed)
    assert secret.settings == {"score": "iou", "n": [1, 2]} and secret.files == files
    with pytest.raises(ValueError):
        kit().Secret.unpack(packed + b"x")


def test_a_cad_reference_checks_record_is_well_formed() -> None:
    # TASKGYM_CHECK_REFERENCE=1: no part, only the reference's verdict and properties
    record = {"gate": True, "reason": None, "reference_fault": False,
              "reference_properties": {"volume": 1.0}, "timing": {"import_sec": 0.1}}
    assert cad_verifier.CadResult.model_validate(record).gate
    with pytest.raises(ValueError):
        cad_verifier.CadResult.model_validate({**record, "iou": 1.0})  # half a part's measures
