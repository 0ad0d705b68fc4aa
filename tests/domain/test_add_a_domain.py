"""docs/add-a-domain.md, followed to the letter: a new domain from an empty folder.

The page's files (each block after a bold ``path`` line) are written into an empty temporary
folder, the package is installed with ``pip install --no-deps`` into a fresh venv that sees
this Python's packages (taskgym among them), and the page's ``play.py`` runs there: the oracle
scores 1 and the do-nothing agent 0 on the local sandbox, as the page's output says.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "add-a-domain.md"
PLAY_OUTPUT = re.compile(r"^\*\*`play.py`\*\*\n\n```python\n.*?^```\n\n```\n(.*?)\n```$",
                         re.MULTILINE | re.DOTALL)
"""What the page says play.py prints."""
FILE_BLOCK = re.compile(r"^\*\*`([^`]+)`\*\*\n\n```[a-z]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def page_files() -> dict[str, str]:
    """The files the page writes, by path."""
    return dict(FILE_BLOCK.findall(PAGE.read_text()))


def test_the_page_shows_the_whole_domain() -> None:
    files = page_files()
    assert set(files) == {"my-domain/pyproject.toml", "my-domain/src/taskgym_linear/__init__.py",
                          "my-domain/src/taskgym_linear/grade.py", "play.py"}
    # the kit is all the env needs from taskgym
    env = files["my-domain/src/taskgym_linear/__init__.py"]
    assert re.findall(r"^from (taskgym\S*) import", env, re.MULTILINE) == ["taskgym.domain"]


@pytest.mark.sandbox
@pytest.mark.slow  # a venv and a package install: about 15 s
def test_a_new_domain_built_as_the_page_says_scores_oracle_1_and_null_0(tmp_path: Path) -> None:
    for relative, text in page_files().items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True)
    python = venv / "bin" / "python"
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                              "--quiet", "--no-deps", str(tmp_path / "my-domain")],
                             capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH", "")) if p)}
    played = subprocess.run([str(python), "play.py"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert played.returncode == 0, played.stderr
    output = PLAY_OUTPUT.search(PAGE.read_text())
    assert output is not None
    assert played.stdout.splitlines() == output.group(1).splitlines()
    assert [line.split()[:3] for line in played.stdout.splitlines()] == [
        ["oracle", "0", "1.0"], ["oracle", "1", "1.0"], ["null", "0", "0.0"], ["null", "1", "0.0"]]
