"""The sandbox's layering: it imports nothing of taskgym above it (the core, the domains), and
its generic parts name no backend (each backend's specifics sit behind the Backend contract)."""

from __future__ import annotations

import ast
from pathlib import Path

import taskgym.sandbox

SANDBOX = Path(taskgym.sandbox.__file__).parent
ALLOWED_OUTSIDE = ("taskgym.errors", "taskgym.paths")
BACKENDS = ("local", "docker", "unisolated")
GENERIC = ("base.py", "config.py", "backends.py", "shell", "grading", "snapshots", "host")


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return [n for n in names if n == "taskgym" or n.startswith("taskgym.")]


def _modules(*parts: str) -> list[Path]:
    found: list[Path] = []
    for part in parts:
        where = SANDBOX / part
        found += [where] if where.is_file() else sorted(where.rglob("*.py"))
    return found


def test_the_sandbox_imports_nothing_above_it() -> None:
    wrong = {f"{path.relative_to(SANDBOX)}: {name}" for path in _modules(".") for name in _imports(path)
             if not name.startswith("taskgym.sandbox") and name not in ALLOWED_OUTSIDE}
    assert not wrong, sorted(wrong)


def test_generic_sandbox_code_names_no_backend() -> None:
    wrong = {f"{path.relative_to(SANDBOX)}: {name}" for path in _modules(*GENERIC)
             for name in _imports(path)
             if any(name.startswith(f"taskgym.sandbox.{backend}") for backend in BACKENDS)}
    assert not wrong, sorted(wrong)
