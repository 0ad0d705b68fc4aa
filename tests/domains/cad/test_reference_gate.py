"""The reference gate at reset: its verdict is kept on disk, so a new process does not rebuild it."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from taskgym.core.task import load_task
from taskgym.domains.cad import verifier
from taskgym.errors import ConfigError
from taskgym.paths import cache_dir
from taskgym.sandbox import Backend

FIXTURES = Path(__file__).parents[3] / "fixtures" / "cad"
pytestmark = pytest.mark.sandbox


def _no_grading(*_args: Any) -> Any:
    raise AssertionError("the reference was built again: the kept verdict was not used")


@pytest.fixture()
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TASKGYM_CACHE", str(tmp_path / "cache"))
    return cache_dir() / verifier.CHECKS_CACHE


def test_a_kept_verdict_is_read_not_rebuilt(tmp_path: Path, fresh_cache: Path,
                                            local_backend: Backend,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "tiny-part"
    shutil.copytree(FIXTURES / "tiny-part", folder)
    task = load_task(folder, "cad")
    verifier.check_reference(task, local_backend)  # builds the reference once
    kept = list(fresh_cache.glob("*.json"))
    assert len(kept) == 1 and '"fault": null' in kept[0].read_text()
    with monkeypatch.context() as patch:  # what a new process finds: the file, no memory
        patch.setattr(verifier, "_grade", _no_grading)
        verifier.check_reference(task, local_backend)
    kept[0].write_text("{not json")  # a damaged entry is rebuilt, not trusted
    verifier.check_reference(task, local_backend)
    assert '"fault": null' in kept[0].read_text()
    reference = folder / "tests" / "reference.py"  # another reference: another verdict
    reference.write_text(reference.read_text() + "\n# changed\n")
    with pytest.raises(AssertionError, match="built again"), monkeypatch.context() as patch:
        patch.setattr(verifier, "_grade", _no_grading)
        verifier.check_reference(load_task(folder, "cad"), local_backend)


def test_a_kept_fault_fails_reset_without_building(tmp_path: Path, fresh_cache: Path,
                                                   local_backend: Backend,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "two-blocks"
    shutil.copytree(FIXTURES / "tiny-part", folder)
    (folder / "tests" / "reference.py").write_text(
        "import cadquery as cq\n\nresult = cq.Workplane().box(1, 1, 1).add(\n"
        "    cq.Workplane().box(1, 1, 1).translate((2, 0, 0)))\n")
    task = load_task(folder, "cad")
    with pytest.raises(ConfigError, match="2 solids"):
        verifier.check_reference(task, local_backend)
    monkeypatch.setattr(verifier, "_grade", _no_grading)
    with pytest.raises(ConfigError, match="2 solids"):
        verifier.check_reference(task, local_backend)
