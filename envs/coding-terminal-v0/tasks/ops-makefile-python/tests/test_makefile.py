import hashlib
import os
import shutil
import subprocess
import tarfile

import pytest

MAKE = "/usr/bin/make"


@pytest.fixture
def proj(tmp_path):
    dst = tmp_path / "checkout"
    shutil.copytree("/app", dst, ignore=shutil.ignore_patterns("dist", "__pycache__", ".pytest_cache", ".git"))
    assert (dst / "Makefile").is_file(), "no /app/Makefile"
    return dst


def make(proj, *targets, timeout=90):
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8"}
    return subprocess.run([MAKE, "-C", str(proj), *targets], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd="/tmp")


def set_version(proj, v):
    init = proj / "src/tallyho/__init__.py"
    text = init.read_text().replace('__version__ = "0.3.1"', f'__version__ = "{v}"')
    init.write_text(text)


def file_members(path):
    with tarfile.open(path, "r:gz") as tf:
        return {m.name: tf.extractfile(m).read() for m in tf.getmembers() if m.isfile()}, \
            [m.name for m in tf.getmembers()]


def test_dist_contents_and_checksum(proj):
    pyc = proj / "src/tallyho/__pycache__"
    pyc.mkdir()
    (pyc / "core.cpython-311.pyc").write_bytes(b"junk")
    (proj / "src/tallyho/sub").mkdir()
    (proj / "src/tallyho/sub/extra.py").write_text("X = 1\n")
    (proj / "src/tallyho/notes.txt").write_text("not shipped\n")
    r = make(proj, "dist")
    assert r.returncode == 0, r.stdout + r.stderr
    tgz = proj / "dist/tallyho-0.3.1.tar.gz"
    files, names = file_members(tgz)
    top = "tallyho-0.3.1/"
    expected = {top + "README.md", top + "pyproject.toml", top + "src/tallyho/__init__.py",
                top + "src/tallyho/core.py", top + "src/tallyho/cli.py", top + "src/tallyho/sub/extra.py"}
    assert set(files) == expected
    assert all(n == top.rstrip("/") or n.startswith(top) for n in names)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    assert files[top + "src/tallyho/core.py"] == (proj / "src/tallyho/core.py").read_bytes()
    digest = hashlib.sha256(tgz.read_bytes()).hexdigest()
    assert (proj / "dist/tallyho-0.3.1.tar.gz.sha256").read_text() == f"{digest}  tallyho-0.3.1.tar.gz\n"


def test_dist_version_not_hardcoded_and_rebuilds(proj):
    assert make(proj, "dist").returncode == 0
    set_version(proj, "2.7.0rc3")
    core = proj / "src/tallyho/core.py"
    core.write_text(core.read_text() + "\n\nMARKER = 'rebuilt'\n")
    r = make(proj, "dist")
    assert r.returncode == 0, r.stdout + r.stderr
    files, _ = file_members(proj / "dist/tallyho-2.7.0rc3.tar.gz")
    assert b"MARKER = 'rebuilt'" in files["tallyho-2.7.0rc3/src/tallyho/core.py"]
    assert b'__version__ = "2.7.0rc3"' in files["tallyho-2.7.0rc3/src/tallyho/__init__.py"]
    assert (proj / "dist/tallyho-2.7.0rc3.tar.gz.sha256").read_text().endswith("  tallyho-2.7.0rc3.tar.gz\n")


def test_lint_passes_then_catches_syntax_error(proj):
    r = make(proj, "lint")
    assert r.returncode == 0, r.stdout + r.stderr
    (proj / "tests/test_broken.py").write_text("def f(:\n    pass\n")
    assert make(proj, "lint").returncode != 0
    (proj / "tests/test_broken.py").unlink()
    (proj / "src/tallyho/deep").mkdir()
    (proj / "src/tallyho/deep/mod.py").write_text("x = (1,\n")
    assert make(proj, "lint").returncode != 0


def test_lint_runs_style_checker(proj):
    core = proj / "src/tallyho/core.py"
    core.write_text(core.read_text() + "\nY = 2   \n")
    r = make(proj, "lint")
    assert r.returncode != 0
    assert "trailing whitespace" in r.stdout + r.stderr


def test_test_target(proj):
    r = make(proj, "test")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 passed" in r.stdout
    (proj / "tests/test_fail.py").write_text("import tallyho\n\ndef test_x():\n    assert tallyho.top_n({}) == [1]\n")
    r = make(proj, "test")
    assert r.returncode != 0 and "1 failed" in r.stdout


def test_default_goal_is_lint_then_test(proj):
    r = make(proj)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 passed" in r.stdout
    core = proj / "src/tallyho/core.py"
    core.write_text(core.read_text() + "\nZ = 1\t\n")
    r = make(proj)
    assert r.returncode != 0 and "2 passed" not in r.stdout  # lint fails first, tests never run
    text = (proj / "Makefile").read_text()
    phony = " ".join(l.split(":", 1)[1] for l in text.splitlines() if l.startswith(".PHONY"))
    for t in ("all", "lint", "test", "dist", "clean"):
        assert t in phony.split(), f"{t} not declared .PHONY"


def test_clean(proj):
    assert make(proj, "dist").returncode == 0
    assert make(proj, "test").returncode == 0
    (proj / "tests/__pycache__").mkdir(exist_ok=True)
    (proj / "src/tallyho/__pycache__").mkdir(exist_ok=True)
    (proj / ".pytest_cache").mkdir(exist_ok=True)
    r = make(proj, "clean")
    assert r.returncode == 0, r.stdout + r.stderr
    leftovers = [os.path.join(d, n) for d, dirs, _ in os.walk(proj) for n in dirs
                 if n in ("__pycache__", ".pytest_cache", "dist")]
    assert leftovers == []
    assert (proj / "src/tallyho/core.py").exists() and (proj / "Makefile").exists()
