"""Seeded coding-task generators: determinism, seed diversity and folder shape (no sandbox)."""

from __future__ import annotations

import hashlib
import os
import pathlib
import subprocess
import sys
import tomllib
from types import ModuleType

import pytest

from taskgym.domains.coding.generators import mutation, spec, wrangling

GENERATORS: list[ModuleType] = [mutation, wrangling, spec]
IDS = [g.NAME for g in GENERATORS]
SRC = pathlib.Path(mutation.__file__).resolve().parents[4]  # .../src


def _tree(root: pathlib.Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _digest(root: pathlib.Path) -> str:
    h = hashlib.sha256()
    for rel, data in _tree(root).items():
        h.update(rel.encode() + b"\0" + hashlib.sha256(data).digest())
    return h.hexdigest()


@pytest.mark.parametrize("gen", GENERATORS, ids=IDS)
def test_module_interface(gen: ModuleType) -> None:
    assert isinstance(gen.NAME, str) and gen.NAME
    assert isinstance(gen.DESCRIPTION, str) and "\n" not in gen.DESCRIPTION
    assert callable(gen.generate)


@pytest.mark.parametrize("gen", GENERATORS, ids=IDS)
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_same_seed_same_bytes(gen: ModuleType, seed: int, tmp_path: pathlib.Path) -> None:
    gen.generate(seed, tmp_path / "a")
    gen.generate(seed, tmp_path / "nested" / "b")  # dest and its parents may not exist yet
    assert _tree(tmp_path / "a") == _tree(tmp_path / "nested" / "b")


@pytest.mark.parametrize("gen", GENERATORS, ids=IDS)
def test_deterministic_across_hash_seeds(gen: ModuleType, tmp_path: pathlib.Path) -> None:
    """Fresh interpreters with different PYTHONHASHSEED: catches set/dict-order dependence."""
    digests = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"h{hash_seed}"
        code = (f"import pathlib; from taskgym.domains.coding.generators import {gen.NAME} as g; "
                f"g.generate(3, pathlib.Path({str(out)!r}))")
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(SRC)}
        subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
        digests.append(_digest(out))
    assert digests[0] == digests[1]


@pytest.mark.parametrize("gen", GENERATORS, ids=IDS)
def test_seeds_differ(gen: ModuleType, tmp_path: pathlib.Path) -> None:
    digests, instructions = set(), set()
    for seed in range(10):
        gen.generate(seed, tmp_path / str(seed))
        digests.add(_digest(tmp_path / str(seed)))
        instructions.add((tmp_path / str(seed) / "instruction.md").read_text())
    assert len(digests) == 10
    assert len(instructions) >= 6


@pytest.mark.parametrize("gen", GENERATORS, ids=IDS)
@pytest.mark.parametrize("seed", range(12))
def test_task_folder_shape(gen: ModuleType, seed: int, tmp_path: pathlib.Path) -> None:
    gen.generate(seed, tmp_path)
    toml = tomllib.loads((tmp_path / "task.toml").read_text())
    expected = toml["verifier"]["expected_tests"]
    assert type(expected) is int and expected >= 4
    assert toml["metadata"]["difficulty"] in ("easy", "medium", "hard")
    instruction = (tmp_path / "instruction.md").read_text()
    assert "seed" not in instruction.lower()
    assert (tmp_path / "solution" / "solve.sh").read_text().startswith("#!/bin/bash")
    tests = sorted((tmp_path / "tests").glob("test_*.py"))
    assert tests
    for test in tests:
        compile(test.read_text(), str(test), "exec")  # hidden tests are valid Python
    start = [p for p in (tmp_path / "environment" / "files").rglob("*") if p.is_file()]
    assert start
    total = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file())
    assert total < 200_000
