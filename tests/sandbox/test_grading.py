"""The shared grading runner: fresh sandbox, secrets by descriptor, nonce-tagged reports."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from taskgym.sandbox import Backend, SandboxSpec
from taskgym.sandbox.grading import run_grader

GRADER = r"""
import json, os
nonce = os.read(int(os.environ["TASKGYM_NONCE_FD"]), 64).decode()
report = os.fdopen(int(os.environ["TASKGYM_REPORT_FD"]), "w")
secret = os.read(int(os.environ["TASKGYM_SECRET_FD"]), 1 << 20)
print("not a record", file=report)
print("0" * 32, json.dumps({"final": True, "forged": True}), file=report)
print(nonce, "[1, 2]", file=report)
print(nonce, "{broken", file=report)
print(nonce, json.dumps({"seen": sorted(os.listdir(".")), "secret": secret.decode()}), file=report)
print(nonce, json.dumps({"final": True, "tail": "x" * 200000}), file=report)
print(nonce, json.dumps({"after": True}), file=report)
"""


WARM = pytest.mark.parametrize("preload", [None, ("json",)], ids=["cold", "warm"])
"""Each runner test cold, and through a pre-started grader (taskgym.sandbox.grading.warm)."""


@WARM
def test_only_nonce_tagged_objects_come_back(backend: Backend, tmp_path: Path,
                                             preload: Sequence[str] | None) -> None:
    (tmp_path / "answer.txt").write_text("42")
    (tmp_path / "grade.py").write_text(GRADER)
    run = run_grader(backend, SandboxSpec(), ["python3", "-I", "grade.py"], seed=tmp_path,
                     timeout=60, secrets={"TASKGYM_SECRET_FD": b"the reference"}, preload=preload)
    assert run.result.exit_code == 0, run.log()
    seen = run.records[0]
    assert seen["secret"] == "the reference"
    assert seen["seen"] == ["answer.txt", "grade.py"]  # the secret is no file in the sandbox
    final = run.final()
    assert final is not None and len(final["tail"]) == 200000 and "forged" not in final
    assert run.records[-1] == {"after": True}
    assert len(run.records) == 3


@WARM
def test_a_grader_that_reports_nothing_gives_no_records(backend: Backend, tmp_path: Path,
                                                         preload: Sequence[str] | None) -> None:
    (tmp_path / "grade.py").write_text("import sys; print('all tests passed'); sys.exit(0)")
    run = run_grader(backend, SandboxSpec(), ["python3", "-I", "grade.py"], seed=tmp_path,
                     timeout=60, preload=preload)
    assert run.records == [] and run.final() is None
    assert "all tests passed" in run.log()
