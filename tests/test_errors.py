"""taskgym.errors.needs_extra: the one way an optional import becomes MissingDependencyError."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from taskgym.errors import MissingDependencyError, needs_extra

SRC = Path(__file__).resolve().parents[1] / "src" / "taskgym"


def test_a_missing_module_is_named_with_the_extra_that_installs_it() -> None:
    with pytest.raises(MissingDependencyError) as info, needs_extra("RemoteEnv", "serve"):
        import taskgym_no_such_module  # type: ignore[import-not-found]  # noqa: F401
    assert str(info.value) == ("RemoteEnv needs taskgym_no_such_module: "
                               "pip install 'taskgym[serve]'")
    assert isinstance(info.value.__cause__, ModuleNotFoundError)


def test_a_name_missing_from_a_module_names_the_module() -> None:
    with pytest.raises(MissingDependencyError, match=r"^search needs json: pip install "
                                                     r"'taskgym\[pdf\]'$"), \
            needs_extra("search", "pdf"):
        from json import no_such_name  # type: ignore[attr-defined]  # noqa: F401


def test_other_errors_and_a_missing_dependency_pass_unchanged() -> None:
    inner = MissingDependencyError("the grader needs pytest: taskgym doctor")
    with pytest.raises(MissingDependencyError) as info, needs_extra("x", "y"):
        raise inner
    assert info.value is inner
    with pytest.raises(KeyError), needs_extra("x", "y"):
        raise KeyError("k")
    with needs_extra("x", "y"):
        import json  # present: nothing raised
    assert json.dumps(1) == "1"


def _hand_written_blocks(path: Path) -> list[int]:
    """Lines of ``except ImportError`` handlers that raise MissingDependencyError themselves."""
    found = []
    for node in ast.walk(ast.parse(path.read_bytes())):
        if not isinstance(node, ast.ExceptHandler) or node.type is None:
            continue
        caught = {n.id for n in ast.walk(node.type) if isinstance(n, ast.Name)}
        raises = {n.id for stmt in node.body for n in ast.walk(stmt)
                  if isinstance(n, ast.Name) and isinstance(stmt, ast.Raise)}
        if caught & {"ImportError", "ModuleNotFoundError"} and "MissingDependencyError" in raises:
            found.append(node.lineno)
    return found


def test_no_module_writes_the_optional_import_block_by_hand() -> None:
    written = {str(p.relative_to(SRC)): lines for p in sorted(SRC.rglob("*.py"))
               if p.name != "errors.py" and (lines := _hand_written_blocks(p))}
    assert written == {}, "use taskgym.errors.needs_extra"
