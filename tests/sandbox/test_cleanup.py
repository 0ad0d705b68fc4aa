"""Nothing is left behind: not after 200 episodes, not after a crash (the reaper)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import taskgym
from taskgym.agents import ScriptedAgent
from taskgym.evaluation import run_episode
from taskgym.sandbox.host.cgroups import cgroup_parents
from taskgym.sandbox.host.cleanup import reap, runtime_root

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

FIXTURES = Path(__file__).parents[2] / "fixtures" / "coding"
CALC = FIXTURES / "calc"
HELLO = FIXTURES / "harbor-hello"  # graded by a shell script: quick, so 200 episodes stay cheap


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
                found.append(int(entry.name))
    return found


def _ours(paths: list[Path]) -> list[Path]:
    prefix = f"{os.getpid()}-"
    return [p for p in paths if p.name.startswith(prefix)]


def _leftovers() -> dict[str, list[str]]:
    cgroups = [c for parent in cgroup_parents() if parent.is_dir() for c in parent.iterdir()
               if c.is_dir()]
    return {
        "processes": [str(p) for p in _children_of(os.getpid())],
        "runtime dirs": [str(p) for p in _ours(list(runtime_root().iterdir()))],
        "cgroups": [str(p) for p in _ours(cgroups)],
    }


def test_200_episodes_leave_nothing_behind() -> None:
    before = _leftovers()  # whatever earlier tests in this process still hold
    env = taskgym.make("coding-terminal-v0", tasks=str(HELLO), max_steps=3)
    agent = ScriptedAgent([{"tool": "bash", "args": {"command": "sleep 1000 & setsid sleep 1001 &"}}])
    try:
        for episode in range(200):
            record = run_episode(env, agent, seed=episode)
            assert record.error is None and record.steps == 2
    finally:
        env.close()
    after = _leftovers()
    # nothing new: what earlier tests still held may have ended meanwhile (a dropped env's
    # spare or grader closed by its finalizer), so "after" is compared as a subset
    assert {kind: sorted(set(found) - set(before[kind])) for kind, found in after.items()} == {
        "processes": [], "runtime dirs": [], "cgroups": []}


def test_the_reaper_removes_what_a_killed_run_left() -> None:
    script = (
        "import os, signal, taskgym\n"
        f"env = taskgym.make('coding-terminal-v0', tasks={str(CALC)!r})\n"
        "env.reset()\n"
        "env.step({'tool': 'bash', 'args': {'command': 'sleep 999 &'}})\n"
        "from taskgym.sandbox.host.cleanup import runtime_root, session_name\n"
        "(runtime_root() / (session_name() + '-scratch')).mkdir()\n"
        "print(os.getpid(), flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    dead = proc.stdout.strip()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(
            (Path("/proc") / p.name / "cmdline").exists() for p in Path("/proc").iterdir()
            if p.name.isdigit() and _cmd(p) == "sleep 999"):
        time.sleep(0.05)
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _cmd(p) == "sleep 999"]
    left_dirs = [p for p in runtime_root().iterdir() if p.name.startswith(f"{dead}-")]
    left_cgroups = [c for parent in cgroup_parents() if parent.is_dir()
                    for c in parent.iterdir() if c.name.startswith(f"{dead}-")]
    assert left_dirs  # the crash did leave something: the reaper has work to do
    removed = reap()
    assert {str(p) for p in left_dirs + left_cgroups} <= set(removed)
    assert not [p for p in runtime_root().iterdir() if p.name.startswith(f"{dead}-")]


def _cmd(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def test_the_reaper_removes_folders_nested_deeper_than_python_recurses(tmp_path: Path) -> None:
    # an agent can nest folders thousands deep; whatever a killed run left of them must not
    # crash the reaper every later start runs (shutil.rmtree raised RecursionError here)
    dead = runtime_root() / f"{2**22 + 7}-1-deep"  # above pid_max: no such owner is alive
    deep = dead / "app"
    deep.mkdir(parents=True)
    fd = os.open(deep, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for level in range(3000):
            os.mkdir("d", dir_fd=fd)
            if level % 500 == 0:
                os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
            sub = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = sub
        os.symlink("/etc", "link", dir_fd=fd)  # removed, never followed
    finally:
        os.close(fd)
    assert str(dead) in reap()
    assert not dead.exists()
    assert Path("/etc/passwd").exists()
