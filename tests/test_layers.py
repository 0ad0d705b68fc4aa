"""Every module of taskgym sits in one layer of docs/architecture.md's drawing, and imports only
from its own layer and those below it (imports inside functions and ``TYPE_CHECKING`` blocks
count too). A new package must be given its layer here, next to the drawing.

``taskgym/__init__.py``, the public names, re-exports from every layer and sits in none; only
the layers that face users (trainers and wires, the command line) may use it, as users do."""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

import taskgym

SRC = Path(taskgym.__file__).parent

LAYERS: list[tuple[str, tuple[str, ...]]] = [  # bottom first, as the drawing reads upwards
    ("errors and paths", ("errors.py", "paths.py")),
    ("sandbox", ("sandbox/",)),
    ("core", ("core/",)),
    ("the kit", ("domain/", "tools/")),
    ("domains", ("domains/",)),
    ("above the domains", ("evaluation.py", "rollouts.py", "checks.py", "fuzz.py", "agents/")),
    ("trainers and wires", ("integrations/", "episodes.py", "server/", "mcp_server/", "remote.py",
                            "ray/")),
    ("the command line", ("cli/", "doctor.py", "__main__.py")),
]
PUBLIC_NAMES_USERS = ("trainers and wires", "the command line")


def layer_of(relative: str) -> int:
    """The index in :data:`LAYERS` of the module at ``relative`` (a path under ``taskgym/``)."""
    for index, (_name, places) in enumerate(LAYERS):
        if any(relative == place or (place.endswith("/") and relative.startswith(place))
               for place in places):
            return index
    raise AssertionError(f"taskgym/{relative} is in no layer: give it one in LAYERS and in "
                         "docs/architecture.md's drawing")


def modules() -> dict[str, str]:
    """Dotted module name -> path under ``taskgym/``, for every module of the package."""
    found = {}
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC).as_posix()
        name = "taskgym." + relative[:-3].replace("/", ".")
        found[name.removesuffix(".__init__")] = relative
    return found


def imported(path: Path, known: Collection[str]) -> list[tuple[str, int]]:
    """The taskgym modules (of ``known``) that ``path`` imports, with their lines: for
    ``from a import b``, the module ``a.b`` when there is one, else ``a``."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                names.append((submodule if submodule in known else node.module, node.lineno))
        elif isinstance(node, ast.Import):
            names += [(alias.name, node.lineno) for alias in node.names]
    return [(name, line) for name, line in names if name == "taskgym" or name in known]


def upward_imports() -> list[str]:
    known = modules()
    found = []
    for relative in known.values():
        if relative == "__init__.py":
            continue
        own = layer_of(relative)
        for target, line in imported(SRC / relative, known):
            if target == "taskgym":
                if LAYERS[own][0] not in PUBLIC_NAMES_USERS:
                    found.append(f"taskgym/{relative}:{line} imports taskgym's public names "
                                 f"({LAYERS[own][0]} is below them)")
                continue
            theirs = layer_of(known[target])
            if theirs > own:
                found.append(f"taskgym/{relative}:{line} imports {target} "
                             f"({LAYERS[own][0]} -> {LAYERS[theirs][0]})")
    return found


def test_every_module_has_a_layer() -> None:
    for relative in modules().values():
        if relative != "__init__.py":
            layer_of(relative)


def test_no_module_imports_from_a_layer_above_its_own() -> None:
    assert upward_imports() == []


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    module.write_text("from taskgym import errors\n\n\n"
                      "def late():\n    from taskgym.integrations import tool_methods\n")
    found = imported(module, modules())
    assert ("taskgym.integrations.tool_methods", 5) in found
    assert ("taskgym.errors", 1) in found and ("taskgym", 1) not in found
    assert layer_of("integrations/tool_methods.py") > layer_of("core/env.py")
