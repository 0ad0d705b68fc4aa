"""The docs and the README agree with the code: rendering, the first command, doctor's sample."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").rglob("*.md"))


def test_no_escaped_pipes_in_tables():
    # mkdocs' tables keep a pipe inside `code` in its cell, and show "\\|" literally
    bad = [f"{p.relative_to(ROOT)}:{i}" for p in DOCS
           for i, line in enumerate(p.read_text().splitlines(), 1)
           if line.startswith("|") and "\\|" in line]
    assert not bad


def test_built_site_links_work_from_disk():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert config["use_directory_urls"] is False


def test_fresh_machine_check_runs_the_readme_first_command():
    # scripts/test_fresh_machine.sh reads the command the way this test does
    script = (ROOT / "scripts" / "test_fresh_machine.sh").read_text()
    extract = re.search(r"command=\"\$\((awk .*?)\)\"", script)
    assert extract is not None
    got = subprocess.run(["bash", "-c", extract.group(1)], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.strip()
    readme = (ROOT / "README.md").read_text()
    first_bash = readme.split("```bash\n", 1)[1].split("\n", 1)[0]
    assert got == first_bash
    assert got.startswith("./scripts/install.sh && python3 -m taskgym eval coding-terminal-v0")
    assert "./scripts/test_fresh_machine.sh" in (ROOT / "scripts" / "test.sh").read_text()


def test_quickstart_doctor_sample_names_every_check():
    from taskgym.doctor import run_checks

    quickstart = (ROOT / "docs" / "quickstart.md").read_text()
    sample = quickstart.split("$ taskgym doctor\n", 1)[1].split("```", 1)[0]
    shown = {line[4:].split("  ")[0] for line in sample.splitlines()
             if line[:3] in ("ok ", "-- ", "NO ")}
    # the image lines exist only where an engine answers, which the sample's machine has not
    names = {c.name for c in run_checks() if not c.name.startswith(("docker image:", "docker: "))}
    assert names <= shown, names - shown


def _fresh_machine_run(tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    """scripts/test_fresh_machine.sh in a throwaway repository whose README's first command
    is ``command``."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    script = repo / "scripts" / "test_fresh_machine.sh"
    script.write_text((ROOT / "scripts" / "test_fresh_machine.sh").read_text())
    script.chmod(0o755)
    (repo / "README.md").write_text(f"# x\n\n```python\nprint(1)\n```\n\n```bash\n{command}\n"
                                    "```\n\n```bash\nfalse\n```\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", "-C", str(repo)]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    return subprocess.run([str(script)], capture_output=True, text=True, timeout=300)


@pytest.mark.slow  # a venv with pip: about 20 s
def test_fresh_machine_check_uses_a_fresh_clone_and_venv(tmp_path):
    # python3 is the fresh venv's, PYTHONPATH is gone, and the cwd is a clone (not the repo)
    probe = ("python3 -c \"import os, sys; assert sys.prefix != sys.base_prefix; "
             "assert 'PYTHONPATH' not in os.environ; "
             "assert os.path.exists('README.md') and os.getcwd() != '" + str(tmp_path / "repo")
             + "'\" && test -x scripts/test_fresh_machine.sh")
    proc = _fresh_machine_run(tmp_path, probe)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("the README's first command passed in ")


@pytest.mark.slow
def test_fresh_machine_check_fails_when_the_command_fails(tmp_path):
    proc = _fresh_machine_run(tmp_path, "true && python3 -c 'raise SystemExit(3)'")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == ("the README's first command failed on a fresh "
                                            "clone and venv: true && python3 -c 'raise "
                                            "SystemExit(3)'")
