"""No module of taskgym imports a private name from another package.

A private name is a dotted component that starts with one underscore (``_fs``, ``_version``;
not a dunder such as ``__version__``). An import *names* one when the module it imports, or a
name it takes from that module, holds such a component: ``import taskgym.sandbox._fs``,
``from taskgym.sandbox import _fs``, ``from taskgym.sandbox._cgroups import CgroupLimits``,
``from taskgym.sandbox._cgroups import _version``. The attribute read ``module._x`` on a
module bound by an import counts as well (``from taskgym.core import env; env._helper``).

The private name belongs to the package that holds its first private component: for a private
module ``a.b._c``, the package ``a.b``; for a private name ``_d`` defined in the module
``a.b.c``, the package ``a.b`` that holds the module (in a package's ``__init__``, that
package). An import is allowed from anywhere inside that package, subpackages included
(``taskgym.sandbox.docker.backend`` may import ``taskgym.sandbox._fs``), and refused from
anywhere else. Only taskgym's own names are checked, in every module under ``src/taskgym``
(imports inside functions and ``TYPE_CHECKING`` blocks too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def _module_name(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_private(component: str) -> bool:
    return component.startswith("_") and not component.startswith("__")


def _owner(src: Path, dotted: str) -> str | None:
    """The package a private name in ``dotted`` belongs to, or ``None`` when it names none."""
    parts = dotted.split(".")
    for i, component in enumerate(parts):
        if _is_private(component):
            prefix = parts[:i]
            if (src.joinpath(*prefix) / "__init__.py").is_file():
                return ".".join(prefix)
            return ".".join(prefix[:-1])  # a module's private name: the module's package
    return None


def _named(src: Path, path: Path, root: str) -> list[tuple[int, str]]:
    """Every name of the package ``root`` that ``path`` imports or reads off an imported
    module: (line, dotted name)."""
    name = _module_name(src, path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_bytes(), filename=str(path))
    found: list[tuple[int, str]] = []
    bound: dict[str, str] = {}  # local name -> the taskgym module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append((node.lineno, alias.name))
                if alias.asname:
                    bound[alias.asname] = alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                dotted = f"{base}.{alias.name}"
                found.append((node.lineno, dotted))
                if (src.joinpath(*dotted.split(".")).with_suffix(".py").is_file()
                        or (src.joinpath(*dotted.split(".")) / "__init__.py").is_file()):
                    bound[alias.asname or alias.name] = dotted
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound):
            found.append((node.lineno, f"{bound[node.value.id]}.{node.attr}"))
    return [(line, dotted) for line, dotted in found if dotted.split(".")[0] == root]


def crossings(src: Path, root: str = "taskgym") -> list[str]:
    """Each import of a private name of package ``root`` (under ``src``) from outside the
    package it belongs to, as ``file:line: importer takes dotted (private to owner)``."""
    refused = []
    for path in sorted((src / root).rglob("*.py")):
        importer = _module_name(src, path)
        for line, dotted in _named(src, path, root):
            owner = _owner(src, dotted)
            if owner is not None and not (importer + ".").startswith(owner + "."):
                refused.append(f"{path.relative_to(src)}:{line}: {importer} takes {dotted} "
                               f"(private to {owner})")
    return refused


def test_no_module_imports_a_private_name_across_packages() -> None:
    assert crossings(SRC) == []


@pytest.mark.parametrize(("files", "expected"), [
    ({"p/a/_x.py": "", "p/a/sub/m.py": "from p.a import _x\nfrom p.a._x import y\n"}, []),
    ({"p/a/m.py": "_y = 1\n", "p/a/n.py": "from .m import _y\n"}, []),
    ({"p/a/_x.py": "", "p/b/m.py": "from p.a._x import y\n"}, ["p.b.m takes p.a._x.y"]),
    ({"p/a/m.py": "_y = 1\n", "p/b/m.py": "from ..a.m import _y\n"}, ["p.b.m takes p.a.m._y"]),
    ({"p/a/m.py": "", "p/b/m.py": "def f():\n    import p.a.m as am\n    return am._z\n"},
     ["p.b.m takes p.a.m._z"]),
    ({"p/a/sub/m.py": "_y = 1\n", "p/a/n.py": "from p.a.sub.m import _y\n"},
     ["p.a.n takes p.a.sub.m._y"]),
    ({"p/a/m.py": "", "p/b/m.py": "from p.a import __version__\nimport _pytest\n"}, []),
])
def test_the_rule(tmp_path: Path, files: dict[str, str], expected: list[str]) -> None:
    for name, text in files.items():
        for folder in Path(name).parents:
            if str(folder) != ".":
                (tmp_path / folder).mkdir(parents=True, exist_ok=True)
                (tmp_path / folder / "__init__.py").touch()
        (tmp_path / name).write_text(text)
    found = crossings(tmp_path, "p")
    assert [line.split(": ", 1)[1].split(" (private")[0] for line in found] == expected
