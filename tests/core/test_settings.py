"""A domain's own task.toml table read through ``TaskSettings.of``: defaults, checks, and an error
that names the file and the table."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field

from taskgym.core.settings import TaskSettings
from taskgym.core.task import Task, load_task
from taskgym.domains.cad.settings import CadSettings
from taskgym.domains.mesh.verifier import MeshSettings
from taskgym.errors import ConfigError


class ToySettings(TaskSettings):
    table = "toy"
    size: int = Field(default=3, ge=1)


def _task(tmp_path: Path, toml: str) -> Task:
    folder = tmp_path / "task"
    folder.mkdir(exist_ok=True)
    (folder / "instruction.md").write_text("Do it.\n")
    (folder / "task.toml").write_text(toml)
    return load_task(folder, "toy")


def test_a_missing_table_is_every_default_and_a_given_one_is_read(tmp_path: Path) -> None:
    assert ToySettings.of(_task(tmp_path, "")).size == 3
    assert ToySettings.of(_task(tmp_path, "[toy]\nsize = 7\n")).size == 7


@pytest.mark.parametrize("table", ["[toy]\nsize = 0\n", "[toy]\nsise = 4\n", "toy = 5\n"])
def test_a_bad_table_names_the_file_and_the_table(tmp_path: Path, table: str) -> None:
    with pytest.raises(ConfigError, match=r"task\.toml \[toy\]"):
        ToySettings.of(_task(tmp_path, table))


def test_cad_tolerances_turn_off_with_false(tmp_path: Path) -> None:
    checks = CadSettings.of(_task(tmp_path, "[cad.checks]\nbbox_tol_mm = false\n")).checks
    assert checks.bbox_tol_mm is None and checks.hole_diameter_tol_mm == 0.05
    assert CadSettings.of(_task(tmp_path, "[cad.checks]\nbbox_tol_mm = 0\n")).checks.bbox_tol_mm == 0.0
    with pytest.raises(ConfigError, match=r"\[cad\]"):
        CadSettings.of(_task(tmp_path, "[cad.checks]\nbbox_tol_mm = -1\n"))


@pytest.mark.parametrize("table", ['output = "out.stl"\nscore = "hausdorff"\n',
                                   'output = "out.stl"\nhausdorff_mm = 0.1\n',
                                   'output = "out.stl"\nscore = "scene"\n'])
def test_a_mesh_score_needs_its_own_keys(tmp_path: Path, table: str) -> None:
    with pytest.raises(ConfigError, match=r"(?s)\[mesh\].*score 'hausdorff' needs hausdorff_mm"):
        MeshSettings.of(_task(tmp_path, "[mesh]\n" + table))
