"""Snapshots, restores and forks of sessions and of episodes, on both backends."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.core.env import TaskEnv
from taskgym.errors import SandboxError
from taskgym.sandbox import Backend, SandboxSpec, Session
from taskgym.sandbox.host.cleanup import leftovers, memory_root, owner_alive, reap, runtime_root
from taskgym.sandbox.host.procs import children

pytestmark = pytest.mark.sandbox

CODING = "coding-terminal-v0"
TASK = "py-fix-memo-leak"

BUILD = r"""
cd /app && mkdir -p src/pkg empty/inner keep && echo 'print(1)' > src/pkg/mod.py
printf 'line\n' > notes.txt && chmod 0640 notes.txt && printf '#!/bin/sh\n' > run.sh
chmod 0755 run.sh && : > zero && chmod 0000 zero && mkdir secret && echo s > secret/s
chmod 0700 secret && chmod 0555 keep && ln -s src/pkg/mod.py rel-link
ln -s /etc/passwd abs-link && ln -s nowhere dangling && ln -s src dir-link
head -c 3000000 /dev/urandom > big.bin && mkdir before && echo r > before/r
mv before after && chmod 0750 /app && printf 'a\nb' > 'name with spaces and
newline'
cd /app/src/pkg
export SNAP_EXPORTED='a value with spaces'
declare -a SNAP_ARRAY=(one 'two three' "$(printf 'four\nfive')")
declare -A SNAP_MAP=([k]=v)
declare -i SNAP_INT=41+1
readonly SNAP_RO=7
snap_func() { echo "func says $1"; }
shopt -s expand_aliases
alias snapalias='echo alias works'
umask 027
"""

DESTROY = r"""
cd /app && chmod -R u+rwx . && rm -rf /app/* /app/.[!.]* 2>/dev/null
ln -s / /app/evil && mkdir /app/new && head -c 100000 /dev/zero > /app/new/z
cd / && unset SNAP_EXPORTED SNAP_ARRAY SNAP_MAP && unset -f snap_func
unalias snapalias && umask 077 && export LATER=1 && chmod 0755 /app
"""

SHELL_CHECK = (
    'pwd; echo "$SNAP_EXPORTED"; env | grep ^SNAP_EXPORTED=; declare -p SNAP_ARRAY SNAP_MAP '
    'SNAP_INT SNAP_RO; snap_func x; snapalias; umask; echo "later=${LATER-unset}"'
)


def manifest(session: Session) -> dict[str, tuple[Any, ...]]:
    """Every path of the workspace: its type, mode, owner, and content hash or link target."""
    root = session._root_fd  # type: ignore[attr-defined]  (the host's view, as root)
    found: dict[str, tuple[Any, ...]] = {}
    for dirpath, dirnames, filenames, dfd in os.fwalk(".", dir_fd=root, follow_symlinks=False):
        for name in (*dirnames, *filenames):
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            path = os.path.normpath(os.path.join(dirpath, name))
            if stat.S_ISLNK(st.st_mode):
                extra: Any = os.readlink(name, dir_fd=dfd)
            elif stat.S_ISREG(st.st_mode):
                fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dfd)
                with os.fdopen(fd, "rb") as fh:
                    extra = hashlib.sha256(fh.read()).hexdigest()
            else:
                extra = None
            found[path] = (stat.S_IFMT(st.st_mode), stat.S_IMODE(st.st_mode), st.st_uid,
                           st.st_gid, extra)
    return found


def snapshot_folders() -> set[str]:
    """This process's snapshot folders, in memory and on the runtime root."""
    prefix = f"{os.getpid()}-"
    roots = [root for root in (runtime_root(), memory_root()) if root is not None]
    return {p.name for root in roots for p in root.iterdir()
            if p.name.startswith(prefix) and p.name.endswith("-snapshot")}


@pytest.fixture()
def session(backend: Backend) -> Iterator[Session]:
    with backend.start(SandboxSpec()) as started:
        yield started


def test_restore_after_destructive_commands_is_exact(session: Session) -> None:
    built = session.exec(BUILD)
    assert built.exit_code == 0, built
    before = manifest(session)
    assert len(before) > 15 and before["big.bin"][4] is not None
    shell_before = session.exec(SHELL_CHECK)
    snap = session.snapshot()
    try:
        assert snap.workspace_bytes >= 3_000_000
        assert session.exec(DESTROY).exit_code == 0
        assert manifest(session) != before
        session.restore(snap)
        assert manifest(session) == before
        assert session.exec("stat -c %a /app").stdout == "750\n"
        after = session.exec(SHELL_CHECK)
        assert after.stdout == shell_before.stdout
        assert "/app/src/pkg\na value with spaces\nSNAP_EXPORTED=a value" in after.stdout
        assert 'declare -a SNAP_ARRAY=([0]="one" [1]="two three" [2]=$\'four\\nfive\')' in after.stdout
        assert 'declare -i SNAP_INT="42"' in after.stdout and 'declare -r SNAP_RO="7"' in after.stdout
        assert "func says x\nalias works\n0027\nlater=unset" in after.stdout
        # a second restore of the same snapshot gives the same again
        session.exec("rm -rf /app/src; cd /")
        session.restore(snap)
        assert manifest(session) == before
        assert session.exec("pwd").stdout == "/app/src/pkg\n"
    finally:
        snap.close()


def test_background_processes_are_listed_not_carried(session: Session) -> None:
    started = session.exec("sleep 300 & sleep 0.2; echo $!")
    assert started.exit_code == 0
    snap = session.snapshot()
    try:
        listed = [p for p in snap.background if p.command == "sleep 300"]
        assert len(listed) == 1, snap.background
        pid = listed[0].pid
        session.restore(snap)
        with pytest.raises(ProcessLookupError):  # the restore killed it; nothing re-ran it
            os.kill(pid, 0)
        assert session.exec("jobs -p | wc -l").stdout.strip() == "0"
        assert session.snapshot().background == ()
    finally:
        snap.close()


@pytest.mark.parametrize("start", [
    "bash -c 'bash -c \"sleep 301\"' &",  # a grandchild of the shell's job
    "python3 -c 'import subprocess, threading; t = threading.Thread(target=subprocess.run, "
    "args=([\"sleep\", \"301\"],)); t.start(); t.join()' &",  # started by a second thread
    "python3 -c 'import os, time; os.fork() or os._exit(0); time.sleep(301)' &",  # + a zombie
])
def test_every_background_process_is_listed(session: Session, start: str) -> None:
    """However it was started, what runs beside the shell is listed; a zombie is not."""
    assert session.exec(f"{start} sleep 0.5").exit_code == 0
    snap = session.snapshot()
    try:
        commands = [p.command for p in snap.background]
        assert any("301" in c for c in commands), commands
        assert "" not in commands  # no zombie (its command line is empty)
    finally:
        snap.close()


def test_fork_children_diverge(backend: Backend, session: Session) -> None:
    session.exec("echo base > /app/base.txt; export WHO=parent")
    snap = session.snapshot()
    children = [backend.fork(snap) for _ in range(2)]
    snap.close()  # the children do not need it any more
    try:
        for index, child in enumerate(children):
            child.exec(f"echo {index} > /app/child.txt; rm /app/base.txt; export WHO=child{index}")
        assert [c.read_file("/app/child.txt") for c in children] == [b"0\n", b"1\n"]
        assert [c.exec("echo $WHO").stdout for c in children] == ["child0\n", "child1\n"]
        assert session.read_file("/app/base.txt") == b"base\n"
        assert session.exec("echo $WHO; ls /app").stdout == "parent\nbase.txt\n"
    finally:
        for child in children:
            child.close()


def test_snapshot_folder_is_private_and_removed(session: Session) -> None:
    before = snapshot_folders()
    session.exec("echo x > /app/x")
    snap = session.snapshot()
    folder = snap.folder
    assert folder.name in snapshot_folders() - before
    assert owner_alive(folder.name)  # named for this process: the reaper's after a crash
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in (str(folder), str(snap.workspace / "x"), str(runtime_root()),
                 str(memory_root())):
        seen = session.exec(f"test -e '{path}' && echo visible || echo absent")
        assert seen.stdout == "absent\n", path
    assert "-snapshot" not in session.exec("ls -a /tmp / /app").stdout
    snap.close()
    snap.close()  # idempotent
    assert not folder.exists() and snapshot_folders() == before
    with pytest.raises(SandboxError, match="closed"):
        session.restore(snap)


@pytest.mark.parametrize("plant", [
    "ln -s / /app/root-link; ln -s /etc/shadow /app/shadow",
    "ln -s ../../../../../etc /app/up; mkdir -p /app/a/b; ln -s /proc/1/root /app/a/b/init",
    "mkfifo /app/fifo; ln -s /proc/self/fd/0 /app/stdin",
    "ln -s /.taskgym /app/control; ln -s /tmp /app/tmp-link",
])
def test_planted_links_are_saved_as_links(session: Session, plant: str) -> None:
    """The copy into the host folder never follows what the agent planted: links stay links
    (the host file they name is not read), fifos are skipped (never opened, no hang)."""
    assert session.exec(plant).exit_code == 0
    before = manifest(session)
    snap = session.snapshot()
    try:
        for path, (kind, *_rest, target) in before.items():
            saved = snap.workspace / path
            if kind == stat.S_IFLNK:
                assert saved.is_symlink() and os.readlink(saved) == target
            elif kind == stat.S_IFIFO:
                assert not os.path.lexists(saved)
        assert snap.workspace_bytes == 0
        session.restore(snap)
        assert manifest(session) == {p: v for p, v in before.items() if v[0] != stat.S_IFIFO}
    finally:
        snap.close()


@pytest.mark.parametrize("make", [
    "truncate -s 64G /app/huge",
    "printf end | dd of=/app/huge bs=1 seek=40000000000 status=none",
    "mkdir -p /app/a/b && truncate -s 1T /app/a/b/huge && printf mid | dd of=/app/a/b/huge "
    "bs=1 seek=3000000 conv=notrunc status=none",
])
def test_sparse_files_stay_sparse(backend: Backend, make: str) -> None:
    """A file far bigger than the workspace but made of holes (no room used): the snapshot
    copies its data only (not gigabytes of zeros onto the host), and a fork gives it back
    with the same size and bytes, still sparse."""
    with backend.start(SandboxSpec(disk_mb=16)) as session:
        assert session.exec(make).exit_code == 0
        show = "stat -c '%s %b' {}; tail -c 3 {}".format(*["$(find /app -name huge)"] * 2)
        size, blocks, tail = session.exec(show).stdout.split()
        started = time.monotonic()
        snap = session.snapshot()
        try:
            assert time.monotonic() - started < 5
            assert snap.workspace_bytes < 1 << 20
            assert snap.memory_bytes <= snap.workspace_bytes
            saved = next(p for p in snap.workspace.rglob("huge"))
            assert saved.stat().st_size == int(size) and saved.stat().st_blocks <= 64
            with backend.fork(snap) as child:
                c_size, c_blocks, c_tail = child.exec(show).stdout.split()
                assert (c_size, c_tail) == (size, tail) and int(c_blocks) <= 64
        finally:
            snap.close()


def test_hard_links_cannot_multiply_the_copy(backend: Backend) -> None:
    """Hard links are saved once per link, so a copy is capped at the workspace's disk_mb:
    a file linked past that is a SandboxError that says why (nothing is left behind), and
    the session goes on; within it, the links are saved as files."""
    with backend.start(SandboxSpec(disk_mb=8)) as session:
        made = session.exec("head -c 3000000 /dev/urandom > /app/f && ln /app/f /app/g")
        assert made.exit_code == 0
        snap = session.snapshot()
        try:
            assert snap.workspace_bytes == 6_000_000
        finally:
            snap.close()
        assert session.exec("for i in $(seq 40); do ln /app/f /app/l$i; done").exit_code == 0
        before = snapshot_folders()
        with pytest.raises(SandboxError, match="over its cap of 8 MiB.*hard links"):
            session.snapshot()
        assert snapshot_folders() == before
        assert session.exec("rm /app/l*; echo ok").stdout == "ok\n"
        session.snapshot().close()


def test_limits_are_sandbox_errors(backend: Backend, session: Session) -> None:
    """A workspace too big for the session restored into, a shell state over the cap: each
    a SandboxError that says what happened, and the session is still usable."""
    session.exec("head -c 3000000 /dev/urandom > /app/big")
    snap = session.snapshot()
    try:
        with backend.start(SandboxSpec(disk_mb=1)) as small:
            with pytest.raises(SandboxError, match="could not restore the workspace"):
                small.restore(snap)
            assert small.exec("echo ok").stdout == "ok\n"
    finally:
        snap.close()
    session.exec("HUGE=$(head -c 1500000 /dev/zero | tr '\\0' a)")
    before = snapshot_folders()
    with pytest.raises(SandboxError, match="over 1048576 bytes"):
        session.snapshot()
    assert snapshot_folders() == before
    session.exec("unset HUGE")
    session.snapshot().close()


def test_snapshot_of_a_stopped_session_is_a_sandbox_error(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as stopped:
        stopped.stop()
        with pytest.raises(SandboxError, match="stopped"):
            stopped.snapshot()


def test_values_that_look_like_declarations_restore_exactly(session: Session) -> None:
    """The host splits ``declare -p`` into variables by line: values with newlines, with text
    that looks like another declaration, or named like bash's own, come back exactly."""
    made = session.exec(
        "TRICK=$'x\\ndeclare -- PATH=/nowhere\\n'; declare -a LIST=($'a\\nb' 'declare -- Q=1');"
        " declare -A MAP=([$'k\\ny']='declare -x Z') ; BASHFUL=shy; export RANDOMISH=1;"
        " declare -i COUNT; declare -x LATER_SET")
    assert made.exit_code == 0, made
    show = "declare -p TRICK LIST MAP BASHFUL RANDOMISH COUNT LATER_SET; echo \"$PATH\""
    before = session.exec(show)
    assert before.exit_code == 0 and "declare -i COUNT" in before.stdout, before
    snap = session.snapshot()
    try:
        session.exec("unset TRICK LIST MAP BASHFUL RANDOMISH COUNT LATER_SET")
        session.restore(snap)
        assert session.exec(show).stdout == before.stdout
    finally:
        snap.close()


@pytest.mark.parametrize("tampering", [
    "declare() { echo hijacked; }; alias alias='echo x'; IFS=x; set -u",
    "set -e; set -o pipefail; umask() { echo 0777; }; cd() { :; }; alias declare=false",
    "shopt -s expand_aliases; alias printf='echo'; alias builtin=false; PS4=x",
])
def test_tampered_shell_still_restores(session: Session, tampering: str) -> None:
    """Builtins shadowed by functions and aliases, IFS changed, errexit and nounset on: the
    capture calls builtins through ``\\builtin`` and splits no words, so it still works."""
    session.exec(f"mkdir /app/d; cd /app/d; echo v > /app/v; {tampering}")
    before = session.exec("echo \"$IFS\"; set +o | grep -E 'errexit|nounset|pipefail'")
    snap = session.snapshot()
    try:
        session.restore(snap)
        assert session.read_file("/app/v") == b"v\n"
        assert session.exec("echo \"$IFS\"; set +o | grep -E 'errexit|nounset|pipefail'"
                            ).stdout == before.stdout
        assert session.exec("\\builtin pwd").stdout == "/app/d\n"
    finally:
        snap.close()


@pytest.mark.parametrize("tampering", [
    "builtin() { echo no; }",
    "enable -n builtin",
    "exec >/dev/null 2>&1; trap 'exit 3' DEBUG",
])
def test_a_broken_shell_fails_cleanly(session: Session, tampering: str) -> None:
    """What breaks the capture itself (``builtin`` shadowed or disabled, the shell dying)
    is a SandboxError or a restorable snapshot, never a folder left over or a host effect."""
    before = snapshot_folders()
    session.exec(f"echo v > /app/v; {tampering}")
    try:
        snap = session.snapshot()
    except SandboxError:
        assert snapshot_folders() == before
        return
    try:
        session.restore(snap)
        assert session.read_file("/app/v") == b"v\n"
    finally:
        snap.close()


# -- episodes ---------------------------------------------------------------------------

def make_env(**kwargs: Any) -> TaskEnv:
    env = taskgym.make(CODING, **kwargs).unwrapped
    assert isinstance(env, TaskEnv)
    return env


@pytest.fixture(params=[pytest.param("local", marks=pytest.mark.sandbox),
                        pytest.param("docker", marks=pytest.mark.docker)])
def coding_env(request: pytest.FixtureRequest) -> Iterator[TaskEnv]:
    env = make_env(sandbox=request.param, render_mode="ansi")
    yield env
    env.close()


def bash(command: str) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": command}}


def test_fork_children_grade_independently(coding_env: TaskEnv) -> None:
    before = snapshot_folders()
    processes = set(children(os.getpid()))
    coding_env.reset(options={"task_id": TASK})
    coding_env.step(bash("echo parent > /app/parent.txt; export WHO=parent"))
    solver, idle = coding_env.fork(2)
    try:
        assert type(solver) is type(coding_env) and solver is not coding_env
        for child in (solver, idle):
            assert child.steps_taken == 1 and child.task == coding_env.task
            assert child.remaining_seconds() <= coding_env.remaining_seconds() + 1.0
            assert child.transcript == coding_env.transcript
            assert child.session is not coding_env.session
        assert task_reward(solver, coding_env.oracle_actions(solver.task)) == 1.0  # type: ignore[arg-type]
        assert task_reward(idle, [{"tool": "submit", "args": {}}]) == 0.0
        obs, *_ = coding_env.step(bash("echo $WHO; cat /app/parent.txt"))  # the parent goes on
        assert obs["text"].startswith("parent\nparent\n")
    finally:
        solver.close()
        idle.close()
    coding_env.close()
    assert snapshot_folders() == before
    if coding_env.backend.name == "local":  # every child's bwrap is gone with its close
        assert wait_for(lambda: set(children(os.getpid())) <= processes)


def wait_for(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.parametrize("storage", ["memory", "runtime-root"])
def test_a_dead_owners_snapshot_is_reaped(session: Session, storage: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Wherever a snapshot is kept, the reaper removes it once its owner is gone."""
    if storage == "runtime-root":
        monkeypatch.setenv("TASKGYM_SNAPSHOT_MEMORY_BYTES", "0")
    elif memory_root() is None:
        pytest.skip("no writable /dev/shm here")
    snap = session.snapshot()
    assert snap.storage == storage
    _pid, start, rest = snap.folder.name.split("-", 2)
    dead = snap.folder.with_name(f"{2**22 + 7}-{start}-{rest}")  # no such pid
    snap.folder.rename(dead)
    try:
        assert dead in leftovers()
        assert str(dead) in reap() and not dead.exists()
    finally:
        shutil.rmtree(dead, ignore_errors=True)
        snap.close()


def task_reward(env: TaskEnv, actions: list[dict[str, Any]]) -> float:
    reward = 0.0
    for action in actions:
        _obs, reward, terminated, truncated, _info = env.step(action)
        if terminated or truncated:
            return reward
    raise AssertionError("the episode did not end")


def test_episode_state_travels(coding_env: TaskEnv) -> None:
    coding_env.reset(options={"task_id": TASK}, seed=3)
    for n in range(3):
        coding_env.step(bash(f"echo {n} >> /app/log"))
    snap = coding_env.snapshot()
    expected_draw = coding_env.np_random.integers(0, 1 << 30, size=4).tolist()
    fresh = make_env(sandbox=coding_env.backend, render_mode="ansi")
    try:
        fresh.restore(snap)
        assert fresh.steps_taken == 3 and fresh.task == coding_env.task
        assert fresh.episode_limits == coding_env.episode_limits
        assert fresh.np_random.integers(0, 1 << 30, size=4).tolist() == expected_draw
        assert fresh.render() == "\n\n".join(snap.transcript) and len(snap.transcript) == 4
        assert snap.elapsed_sec >= 0 and fresh.remaining_seconds() <= (
            snap.limits.timeout_sec - snap.elapsed_sec + 0.01)
        obs, *_ = fresh.step(bash("cat /app/log"))
        assert obs["text"].startswith("0\n1\n2\n")
    finally:
        fresh.close()
        snap.close()


def test_snapshot_needs_a_running_episode() -> None:
    env = make_env()
    try:
        with pytest.raises(SandboxError, match="no episode is running"):
            env.snapshot()
        env.reset(options={"task_id": TASK})
        env.step({"tool": "submit", "args": {}})
        with pytest.raises(SandboxError, match="over"):
            env.snapshot()
        with pytest.raises(SandboxError):
            env.fork(1)
    finally:
        env.close()


@pytest.mark.sandbox
def test_episode_snapshot_lists_background_processes() -> None:
    env = make_env()
    try:
        env.reset(options={"task_id": TASK})
        env.step(bash("sleep 300 & sleep 0.2"))
        snap = env.snapshot()
        assert [p.command for p in snap.session.background] == ["sleep 300"]
        (child,) = env.fork(1)
        obs, *_ = child.step(bash("jobs -p | wc -l"))
        assert obs["text"].startswith("0\n")
        child.close()
        snap.close()
    finally:
        env.close()


def test_restore_into_another_class_is_refused(tmp_path: Path) -> None:
    env = make_env()
    try:
        env.reset(options={"task_id": TASK})
        snap = env.snapshot()

        class Other(type(env)):  # type: ignore[misc]
            pass

        other = Other()
        with pytest.raises(taskgym.ConfigError, match="same class"):
            other.restore(snap)
        other.close()
        snap.close()
    finally:
        env.close()


def test_a_multi_step_tasks_progress_travels() -> None:
    """The coding domain's own episode state (which step of a multi-step task, the grades so
    far) is carried, and each child's progress is its own."""
    harbor = Path(__file__).resolve().parents[2] / "fixtures" / "harbor"
    env = make_env(tasks=str(harbor))
    try:
        env.reset(options={"task_id": "multi-step"})
        env.step(bash("echo one > list.txt"))
        obs, *_ = env.step({"tool": "submit", "args": {}})
        assert "# next step: extend" in obs["text"]
        early, late = env.fork(2)
        assert task_reward(early, [{"tool": "submit", "args": {}}]) == 0.5
        assert early.last_reward is not None and early.last_reward.components == {
            "step_create": 1.0, "step_extend": 0.0, "steps_graded": 2.0}
        assert not late.is_over and not env.is_over  # early's grades are not theirs
        assert late.episode_state()["_step_run"].results == env.episode_state()["_step_run"].results
        assert len(late.episode_state()["_step_run"].results) == 1
        late.close()
        early.close()
    finally:
        env.close()
