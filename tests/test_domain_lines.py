"""scripts/domain_lines.py counts a domain's host-side lines as its docstring says."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "domain_lines.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("domain_lines", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def _tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_generators_sandbox_scripts_and_data_are_left_out(tmp_path: Path) -> None:
    lines = _load()
    domain = tmp_path / "dom"
    _tree(domain, {"__init__.py": "a\n\n", "env.py": "a\n# comment\n\n", "tools/pdf.py": "x = 1\n",
                   "generators/g.py": "g\n", "generators/deep/h.py": "h\n", "inside/w.py": "w\n",
                   "grader/runner.py": "r\n", "data/x.py": "d\n", "notes.md": "n\n"})
    counted = lines.host_files(domain)
    assert [p.relative_to(domain).as_posix() for p in counted] == [
        "__init__.py", "env.py", "tools/pdf.py"]
    assert sum(lines.count(p) for p in counted) == 6  # blank and comment lines count, as wc -l


def test_core_and_tools_modules_only_one_or_two_domains_use_count_against_them(
        tmp_path: Path) -> None:
    lines = _load()
    _tree(tmp_path / "taskgym", {
        "__init__.py": "from taskgym.core import shared\n",
        "core/__init__.py": "",
        "core/only_a.py": "from taskgym.core.helper import f\nx = 1\n",  # 2 lines, a's
        "core/helper.py": "def f():\n    pass\n\n",  # 3 lines, a's through only_a
        "core/shared.py": "s = 1\n",  # the package itself imports it: shared
        "core/three.py": "t = 1\n",  # three domains: shared machinery
        "tools/__init__.py": "",
        "tools/pair.py": "from . import inside\n" * 4,  # 4 lines, a's and b's
        "tools/inside/__init__.py": "i = 1\n",  # runs in the sandbox: never counted
        "domains/__init__.py": "",
        "domains/a/__init__.py": "",
        "domains/a/env.py": ("from taskgym.core.only_a import x\nfrom taskgym.tools import pair\n"
                             "from taskgym.core import three, shared\n"),
        "domains/b/__init__.py": "",
        "domains/b/env.py": "def make():\n    from ...tools.pair import y\n    import taskgym.core.three\n",
        "domains/c/__init__.py": "",
        "domains/c/generators/__init__.py": "from taskgym.core import three\n",
        # a kit namespace re-exports what it does not use: it hides nobody's code
        "kit/__init__.py": ("from taskgym.tools.only_d import D\nfrom taskgym.core.used import U\n"
                            "__all__ = ['D', 'U']\nDEFAULT = U()\n"),
        "tools/only_d.py": "class D:\n    pass\n",  # 2 lines, d's through the kit
        "core/used.py": "class U:\n    pass\n",  # the kit itself uses it: shared
        "domains/d/__init__.py": "",
        "domains/d/env.py": "from taskgym.kit import D, U\n",
    })
    counts = lines.domain_lines(tmp_path)
    assert counts["a"].borrowed == {"core/only_a.py": 2, "core/helper.py": 3, "tools/pair.py": 4}
    assert counts["a"].total == 3 + 9
    assert counts["b"].borrowed == {"tools/pair.py": 4}
    assert counts["c"].borrowed == {} and counts["c"].total == 0
    assert counts["d"].borrowed == {"tools/only_d.py": 2}


def test_max_fails_above_it_and_a_known_overrun_only_when_it_grows(tmp_path: Path) -> None:
    lines = _load()
    counts = {name: lines.DomainCount({"env.py": n}) for name, n in
              [("small", 300), ("big", 301), ("known", 400), ("grown", 401)]}
    failed = lines.over(counts, 300, {"known": 400, "grown": 400})
    assert failed == ["big 301 (over 300)", "grown 401 (over 300, and past its recorded 400)"]


def test_the_table_names_every_domain_and_the_tree_keeps_its_budget() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT), "--max", "300"], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines()[1:] if line.split()[1].isdigit()]
    assert {line.split()[0] for line in rows} == {"cad", "coding", "finance", "game", "mesh"}
    finance = next(line for line in rows if line.startswith("finance "))
    assert "pdf.py" in finance  # finance's PDF code is finance's, wherever it lies
