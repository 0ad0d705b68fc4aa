"""Helpers shared by the seeded task generators (standard library only)."""

from __future__ import annotations

import pathlib
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from taskgym.core import task_folder

# Source of the helpers embedded in hidden test files. The generators exec the very same source to
# compute expected values, so the tests and the generator agree on how results are normalised.
# ``_strict`` turns a result into tagged builtins and rejects any other type (an "always equal"
# object, a str subclass, ...), so comparing its output with ``==`` is safe.
TEST_HELPERS = '''
def _strict(value):
    t = type(value)
    if value is None or t in (bool, int, float, str):
        return (t.__name__, value)
    if t in (list, tuple):
        return (t.__name__, [_strict(v) for v in value])
    if t is dict:
        items = [(_strict(k), _strict(v)) for k, v in value.items()]
        return ("dict", sorted(items, key=repr))
    raise TypeError(f"unexpected result type {t.__name__}")


def _outcome(fn, args):
    try:
        return ("ok", _strict(fn(*args)))
    except Exception as exc:
        return ("raises", type(exc).__name__)


def _scenario(cls, ctor_args, ops):
    # first item: outcome of the constructor; then one outcome per method call
    try:
        obj = cls(*ctor_args)
    except Exception as exc:
        return [("raises", type(exc).__name__)]
    return [("ok", "created")] + [_outcome(getattr(obj, name), margs) for name, margs in ops]
'''


def helper_namespace() -> dict[str, object]:
    """Exec ``TEST_HELPERS`` and return its namespace."""
    ns: dict[str, object] = {}
    exec(compile(TEST_HELPERS, "<test-helpers>", "exec"), ns)
    return ns


def get_callable(ns: Mapping[str, object], name: str) -> Callable[..., object]:
    """Fetch a callable from an exec namespace (typed for mypy)."""
    obj = ns[name]
    if not callable(obj):
        raise TypeError(f"{name} is not callable")
    return obj


def dedent(text: str) -> str:
    """Dedent a triple-quoted block and drop its leading newline."""
    return textwrap.dedent(text).lstrip("\n")


def task_toml(
    *,
    difficulty: str,
    category: str,
    tags: Sequence[str],
    expected_tests: int,
    agent_timeout: int = 900,
    max_steps: int = 60,
    verifier_timeout: int = 120,
) -> dict[str, Any]:
    """task.toml in the layout of the task brief, as data."""
    return task_folder.task_toml(
        difficulty=difficulty, category=category, tags=tags,
        limits={"timeout_sec": agent_timeout, "max_steps": max_steps,
                "verifier_timeout_sec": verifier_timeout, "cpus": 1, "memory_mb": 1024},
        tables={"version": "1.0", "verifier": {"expected_tests": expected_tests}})


def heredoc(path: str, content: str) -> str:
    """Bash snippet that writes ``content`` verbatim to ``path`` (relative to /app)."""
    if not content.endswith("\n"):
        content += "\n"
    marker = "TASK_EOF"
    while marker in content:
        marker += "_X"
    parent = str(pathlib.PurePosixPath(path).parent)
    mkdir = f"mkdir -p '{parent}'\n" if parent != "." else ""
    return f"{mkdir}cat > '{path}' <<'{marker}'\n{content}{marker}\n"


def solve_script(body: str) -> str:
    """Wrap oracle commands into a solve.sh that runs in /app."""
    return "#!/bin/bash\nset -euo pipefail\ncd /app\n" + body


def write_task(
    dest: pathlib.Path,
    *,
    instruction: str,
    toml: Mapping[str, Any],
    start_files: Mapping[str, str],
    solve_sh: str,
    tests: Mapping[str, str],
) -> None:
    """Write one complete task folder into ``dest`` (created if missing)."""
    files: dict[str, str | bytes] = {"solution/solve.sh": solve_sh}
    for rel, text in start_files.items():
        files[f"environment/files/{rel}"] = text
    for rel, text in tests.items():
        files[f"tests/{rel}"] = text
    task_folder.write_task_folder(dest, instruction, toml, files)


def py_literal(value: object) -> str:
    """``repr`` of a value made of builtins (deterministic: no sets are ever passed in)."""
    return repr(value)


def call_repr(qualname: str, args: Sequence[object]) -> str:
    """Render a call such as ``pkg.mod.func(1, 'a')``."""
    return f"{qualname}({', '.join(repr(a) for a in args)})"


def format_cents(cents: int) -> str:
    """Format integer cents as a decimal string with two digits, e.g. -1205 -> '-12.05'."""
    sign = "-" if cents < 0 else ""
    cents = abs(cents)
    return f"{sign}{cents // 100}.{cents % 100:02d}"
