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
    spec.loader.exec_module(module)
    return module


def test_generators_sandbox_scripts_and_data_are_left_out(tmp_path: Path) -> None:
    lines = _load()
    domain = tmp_path / "dom"
    files = {"__init__.py": "a\n\n", "env.py": "a\n# comment\n\n", "tools/pdf.py": "x = 1\n",
             "generators/g.py": "g\n", "generators/deep/h.py": "h\n", "inside/w.py": "w\n",
             "grader/runner.py": "r\n", "data/x.py": "d\n", "notes.md": "n\n"}
    for name, text in files.items():
        (domain / name).parent.mkdir(parents=True, exist_ok=True)
        (domain / name).write_text(text)
    counted = lines.host_files(domain)
    assert [p.relative_to(domain).as_posix() for p in counted] == [
        "__init__.py", "env.py", "tools/pdf.py"]
    assert sum(lines.count(p) for p in counted) == 6  # blank and comment lines count, as wc -l


def test_the_table_names_every_domain_and_max_fails_above_it() -> None:
    run = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                         check=True)
    names = {line.split()[0] for line in run.stdout.splitlines()[1:]}
    assert names == {"cad", "coding", "finance", "game", "mesh"}
    strict = subprocess.run([sys.executable, str(SCRIPT), "--max", "1"], capture_output=True,
                            text=True)
    assert strict.returncode == 1 and "over 1 lines" in strict.stderr
