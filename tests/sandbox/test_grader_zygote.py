"""Grader zygotes (taskgym.sandbox.local.zygote): a grade forked by the zygote cannot reach the
zygote, a sibling grade or the next grade, by any of the ways a shared process tree, mount,
IPC or network namespace would give; and when a zygote cannot start, grades use the pool
and say so. The carry-over attack of tests/sandbox/test_warm_grading.py runs against the
zygote path too (its ``two_warm`` fixture)."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.sandbox import Backend, LocalConfig, SandboxSpec, get_backend
from taskgym.sandbox.grading import run_grader
from taskgym.sandbox.grading.warm import close_warm_graders
from taskgym.sandbox.local.zygote import live_zygotes

pytest.importorskip("cadquery", reason="the cad extra is not installed: pip install 'taskgym[cad]'")

from taskgym.domains.cad.verifier import grade_code  # noqa: E402

pytestmark = pytest.mark.sandbox

KEY = 0x7A79

# what the agent's code tries from inside a zygote's grade; it reports, compactly, what worked
ATTACK = textwrap.dedent(f"""
    import ctypes, json, os, signal, socket, subprocess
    libc = ctypes.CDLL(None, use_errno=True)
    me = os.getpid()
    got = {{}}
    listed = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    cmdlines = []
    for pid in listed:
        if pid == me:  # this process, a fork of the grader, shares its command line too
            continue
        try:
            cmdlines.append(open(f"/proc/{{pid}}/cmdline", "rb").read())
        except OSError:
            pass
    got["listed"] = listed
    got["threads"] = []  # the grader's own threads (OpenCascade's, from building the reference)
    for pid in listed:
        try:
            got["threads"] += [int(t) for t in os.listdir(f"/proc/{{pid}}/task") if int(t) != pid]
        except OSError:
            pass
    # the grader (pid 1) is a fork of the zygote and shares its command line: any other
    # process with it would be the zygote or a sibling grade
    got["stub_processes"] = sum(b"grader_zygote" in c or b"warm_grader" in c for c in cmdlines)
    got["zproc"] = os.listdir("/.taskgym-zproc")
    def answers(pid):
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
    got["answering"] = [p for p in range(1, 1 << 16) if p != me and answers(p)]
    got["ptraced"], got["mem_written"], got["signalled"] = [], [], []
    for pid in got["answering"]:
        if libc.ptrace(16, pid, 0, 0) == 0:  # PTRACE_ATTACH
            got["ptraced"].append(pid)
            libc.ptrace(17, pid, 0, 0)
        try:
            with open(f"/proc/{{pid}}/mem", "wb") as mem:
                mem.write(b"x")
            got["mem_written"].append(pid)
        except OSError:
            pass
    for pid in got["answering"]:  # pid 1 is the grader; the others are this grade's own
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            try:
                os.kill(pid, sig)
                got["signalled"].append(pid)
            except OSError:
                pass
    held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    held.bind("\\0carry-abstract")
    held.listen()
    subprocess.Popen(["/bin/sleep", "600"], pass_fds=[held.fileno()], start_new_session=True)
    with open("/dev/shm/carry-shm", "w") as out:
        out.write("x")
    got["sysv"] = [libc.shmget({KEY}, 4096, 0o1666), libc.semget({KEY}, 1, 0o1666),
                   libc.msgget({KEY}, 0o1666)]
    tmpfs = libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None)
    got["mount"] = [tmpfs, ctypes.get_errno()]
    got["unshare"] = []
    for flag in (0x10000000, 0x20000, 0x40000000, 0x20000000):  # user, mount, net, pid
        got["unshare"].append([libc.unshare(flag), ctypes.get_errno()])
    got["setns"] = []
    for path in ("/proc/1/ns/mnt", "/proc/1/ns/user", "/proc/self/ns/mnt", "/proc/self/ns/net"):
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            got["setns"].append(["open", exc.errno])
            continue
        got["setns"].append([libc.setns(fd, 0), ctypes.get_errno()])
    try:
        with open("/proc/sys/kernel/hostname", "w") as out:
            out.write("carry")
        got["sysctl"] = True
    except OSError:
        got["sysctl"] = False
    status = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
    got["status"] = [status[k].strip() for k in ("CapEff", "CapBnd", "NoNewPrivs", "Seccomp", "NSpid")]
    raise RuntimeError("ATTACK2 " + json.dumps(got, separators=(",", ":")) + " END")
""")

# what the next grade checks before it builds the right part
PROBE = textwrap.dedent(f"""
    import ctypes, errno, os, socket
    libc = ctypes.CDLL(None, use_errno=True)
    found = []
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect("\\0carry-abstract")
        found.append("abstract socket")
    except OSError:
        pass
    if os.path.exists("/dev/shm/carry-shm"):
        found.append("/dev/shm")
    for name, call in (("shm", lambda: libc.shmget({KEY}, 0, 0)), ("sem", lambda: libc.semget({KEY}, 0, 0)),
                       ("msg", lambda: libc.msgget({KEY}, 0))):
        if call() >= 0:
            found.append("sysv " + name)
    # in a zygote's grade, its pid namespace holds the grader (1) and this process: any
    # other is a leftover
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) not in (1, os.getpid()):
            found.append("process " + pid)
    if found:
        raise RuntimeError("CARRIED OVER: " + ", ".join(found))
""")


@pytest.fixture(scope="module")
def cad_tasks() -> Any:
    return taskgym.make("cad-cadquery-v0").unwrapped.task_set  # type: ignore[attr-defined]


@pytest.fixture
def zygote(monkeypatch: pytest.MonkeyPatch, local_backend: Backend) -> Iterator[Backend]:
    monkeypatch.setattr(local_backend, "grader_zygote", True)
    close_warm_graders(local_backend)
    yield local_backend
    close_warm_graders(local_backend)


def _solution(task: Task) -> str:
    return (task.path / "solution" / "solve.py").read_text()


def _report(result: RewardResult) -> dict[str, Any]:
    reason = str(result.details.get("reason"))
    assert "ATTACK2 " in reason and " END" in reason, reason
    found: dict[str, Any] = json.loads(reason.rsplit("ATTACK2 ", 1)[1].split(" END", 1)[0])
    return found


def test_a_grade_reaches_neither_the_zygote_nor_a_sibling_nor_the_next_grade(
        zygote: Backend, cad_tasks: Any) -> None:
    task = cad_tasks.get("plate-four-holes")
    first = grade_code(task, _solution(task).encode(), zygote)  # boots the zygote
    assert first.details["grader_path"] == "zygote" and first.score == 1.0
    before = live_zygotes(zygote)
    assert len(before) == 1
    sibling: list[RewardResult] = []
    slow = "import time\ntime.sleep(8)\n" + _solution(task)
    thread = threading.Thread(target=lambda: sibling.append(grade_code(task, slow.encode(), zygote)))
    thread.start()
    time.sleep(2.5)  # the sibling's grade is forked and sleeping
    attack = grade_code(task, ATTACK.encode(), zygote)
    thread.join(120)
    assert attack.details["grader_path"] == "zygote"
    got = _report(attack)
    # it sees only its own pid namespace: the grader as pid 1 and its own processes
    assert got["stub_processes"] == 1 and got["zproc"] == [], got
    assert set(got["answering"]) <= set(got["listed"] + got["threads"]) and 1 in got["listed"]
    assert max(got["listed"]) < 50, got["listed"]
    assert got["ptraced"] == [] and got["mem_written"] == []
    assert got["sysctl"] is False
    assert got["mount"] == [-1, 1] and all(r == [-1, 1] for r in got["unshare"]), got
    assert all(r in (["open", 13], [-1, 1]) for r in got["setns"]), got["setns"]
    cap_eff, cap_bnd, no_new_privs, seccomp, nspid = got["status"]
    assert int(cap_eff, 16) == 0 and int(cap_bnd, 16) == 0 and no_new_privs == "1" and seccomp == "2"
    assert len(nspid.split()) == 1  # its /proc is its own namespace's
    assert all(i >= 0 for i in got["sysv"])  # it did make its IPC objects
    # the sibling, forked by the same zygote and running meanwhile, was untouched
    assert sibling and sibling[0].score == 1.0, sibling and sibling[0].details.get("reason")
    assert sibling[0].details["grader_path"] == "zygote"
    # the zygote survived, and the next two grades (forked from it) see nothing of the attack
    for _ in range(2):
        after = grade_code(task, (PROBE + _solution(task)).encode(), zygote)
        assert after.details["grader_path"] == "zygote"
        assert after.score == 1.0, after.details.get("reason")
    assert live_zygotes(zygote) == before


def test_the_probe_sees_what_the_attack_leaves(zygote: Backend, cad_tasks: Any) -> None:
    """The probe is not blind: run in the attack's own grade, it finds all of it."""
    task = cad_tasks.get("plate-four-holes")
    both = ATTACK.replace('raise RuntimeError("ATTACK2 "', 'print("ATTACK2 "') + PROBE
    reason = str(grade_code(task, both.encode(), zygote).details.get("reason"))
    for planted in ("abstract socket", "/dev/shm", "sysv shm", "sysv sem", "sysv msg", "process "):
        assert planted in reason, (planted, reason)


def test_a_zygote_that_cannot_start_leaves_grades_to_the_pool(
        zygote: Backend, cad_tasks: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "nsenter"
                        else which(name, *a, **k))
    task = cad_tasks.get("plate-four-holes")
    for _ in range(2):
        result = grade_code(task, _solution(task).encode(), zygote)
        assert result.score == 1.0 and result.details["grader_path"] == "pool"
    assert live_zygotes(zygote) == []


def test_a_backend_configured_without_zygotes_grades_in_the_pool(
        local_backend: Backend, cad_tasks: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """``LocalConfig(grader_zygote=False)`` turns zygotes off for its backend, whatever the
    variable (a default only) says; the default config's backend forks from a zygote."""
    monkeypatch.setenv("TASKGYM_GRADER_ZYGOTE", "1")
    task = cad_tasks.get("plate-four-holes")
    backends = {on: get_backend(LocalConfig(grader_zygote=on, warm_graders=1)) for on in (False, True)}
    try:
        for on, backend in backends.items():
            result = grade_code(task, _solution(task).encode(), backend)
            assert result.score == 1.0, result.details.get("reason")
            assert result.details["grader_path"] == ("zygote" if on else "pool")
            assert bool(live_zygotes(backend)) is on
    finally:
        for backend in backends.values():
            close_warm_graders(backend)


def _sleepers_of_ours() -> list[int]:
    """``sleep`` processes descending from this process."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() != "sleep":
                continue
            pid = int(entry.name)
            for _ in range(64):
                pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
                if pid == os.getpid():
                    found.append(int(entry.name))
                    break
                if pid <= 1:
                    break
        except (OSError, ValueError, IndexError):
            continue
    return found


def test_a_zygote_grade_past_its_timeout_is_killed_with_what_it_left(zygote: Backend,
                                                                     tmp_path: Path) -> None:
    folder = tmp_path / "grader"
    folder.mkdir()
    (folder / "helper.py").write_text("VERSION = 1\n")
    (folder / "g.py").write_text(textwrap.dedent("""
        import subprocess, time
        subprocess.Popen(["/bin/sleep", "600"], start_new_session=True)
        print("started", flush=True)
        time.sleep(600)
    """))
    spec = SandboxSpec(ro_binds={str(folder): "/.g"})
    run = run_grader(zygote, spec, ["python3", "-I", "/.g/g.py"], seed=None, timeout=15,
                     preload=("helper",))
    assert run.path == "zygote"
    assert run.result.timed_out and run.result.exit_code == 124, run.log()
    assert "started" in run.result.stdout
    assert _sleepers_of_ours() == []
    assert len(live_zygotes(zygote)) == 1  # the zygote itself lives on


def _wait_for(check: Any, timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while not check() and time.monotonic() < deadline:
        time.sleep(0.1)
    return bool(check())


def test_a_reset_boots_the_zygote_and_the_last_env_closes_it(zygote: Backend, cad_tasks: Any) -> None:
    """An env's reset (its warm-grader lease) boots the kind's zygote before any grade; closing
    one of two envs keeps it for the other, whose grade it forks; the last close stops it."""
    envs = [taskgym.make("cad-cadquery-v0", sandbox=zygote) for _ in range(2)]
    try:
        assert not live_zygotes(zygote)
        envs[0].reset(options={"task_id": "plate-four-holes"})
        assert _wait_for(lambda: live_zygotes(zygote)), "the reset booted no zygote"
        (pid,) = live_zygotes(zygote)
        envs[1].reset(options={"task_id": "plate-four-holes"})
        envs[0].close()
        assert live_zygotes(zygote) == [pid]
        for action in envs[1].unwrapped.oracle_actions(envs[1].unwrapped.task):  # type: ignore[attr-defined]
            *_, terminated, _, _ = envs[1].step(action)
        reward = envs[1].unwrapped.last_reward  # type: ignore[attr-defined]
        assert terminated and reward.success, reward
        assert reward.details["grader_path"] == "zygote"
        assert live_zygotes(zygote) == [pid]
    finally:
        for env in envs:
            env.close()
    assert _wait_for(lambda: not live_zygotes(zygote) and not os.path.exists(f"/proc/{pid}"), 30)


def _sleeping_grader(folder: Path) -> tuple[SandboxSpec, list[str]]:
    """A grader (preloading ``helper``) that sleeps ``SLEEP`` seconds, then reports."""
    folder.mkdir(exist_ok=True)
    (folder / "helper.py").write_text("VERSION = 1\n")
    (folder / "g.py").write_text(textwrap.dedent("""
        import json, os, time
        time.sleep(float(os.environ.get("SLEEP", "0")))
        nonce = os.read(int(os.environ["TASKGYM_NONCE_FD"]), 64).decode()
        with os.fdopen(int(os.environ["TASKGYM_REPORT_FD"]), "w") as report:
            print(nonce, json.dumps({"slept": os.environ.get("SLEEP", "0")}), file=report)
    """))
    return SandboxSpec(ro_binds={str(folder): "/.g"}), ["python3", "-I", "/.g/g.py"]


def test_an_idle_zygote_is_stopped_and_boots_again_on_demand(
        zygote: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The idle sweep (the backend's ``warm_idle_sec``) stops a zygote whose kind had no grade
    and no reset for that long, but not while a grade of it runs nor while a live episode
    counts on it; the next grade boots it again."""
    from taskgym.sandbox.grading.warm_leases import Lease

    monkeypatch.setattr(zygote, "warm_idle_sec", 1.0)
    spec, argv = _sleeping_grader(tmp_path / "grader")

    def grade(sleep: float) -> None:
        run = run_grader(zygote, spec.model_copy(update={"env": {"SLEEP": str(sleep)}}), argv,
                         seed=None, timeout=60, preload=("helper",))
        assert run.path == "zygote" and run.records == [{"slept": str(sleep)}], run.log()

    grade(0)
    (pid,) = live_zygotes(zygote)
    grade(4)  # longer than the idle time: the sweep leaves a zygote whose grade runs
    assert live_zygotes(zygote) == [pid]
    lease = Lease(zygote, spec, argv, ("helper",))
    try:
        lease.expect()  # an episode that will grade: its zygote is kept however long it runs
        time.sleep(4)
        assert live_zygotes(zygote) == [pid]
        lease.settle()
        assert _wait_for(lambda: not live_zygotes(zygote) and not os.path.exists(f"/proc/{pid}"), 30)
        grade(0)  # the next demand boots it again
        (again,) = live_zygotes(zygote)
        assert again != pid
    finally:
        lease.close()


LOCKS = textwrap.dedent("""
    import ctypes, errno, fcntl, json, os, struct, time
    libc = ctypes.CDLL(None, use_errno=True)
    PATHS = ["/usr/bin/env", "/usr/lib", "/", "/.g/g.py", "/dev/null"]

    def flock_struct(kind, start):
        return struct.pack("hhqqi4x", kind, os.SEEK_SET, start, 1, 0)

    def attempt(call):
        try:
            call()
            return "ok"
        except OSError as exc:
            return errno.errorcode.get(exc.errno, str(exc.errno))

    def hold():
        got, fds = {}, []
        for path in PATHS:
            fd = os.open(path, os.O_RDONLY)
            fds.append(fd)
            got[path] = [attempt(lambda: fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)),
                         attempt(lambda: fcntl.fcntl(fd, fcntl.F_SETLK, flock_struct(fcntl.F_RDLCK, 0))),
                         attempt(lambda: fcntl.fcntl(fd, fcntl.F_OFD_SETLK, flock_struct(fcntl.F_RDLCK, 1)))]
        return got, fds

    def keep_opening(seconds):  # what a watch for opens of a shared file would see
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            os.close(os.open("/usr/bin/true", os.O_RDONLY))  # not a locked one: a close
            # drops the process's POSIX locks on that file
            time.sleep(0.02)

    def watch():
        fd = libc.inotify_init1(os.O_NONBLOCK)
        if fd < 0:
            return "errno " + str(ctypes.get_errno())
        libc.inotify_add_watch(fd, b"/usr/bin/true", 0x20)  # IN_OPEN
        time.sleep(1)
        try:
            return "seen" if os.read(fd, 4096) else "none"
        except BlockingIOError:
            return "none"

    def probe():
        seen = {}
        for path in PATHS:
            fd = os.open(path, os.O_RDONLY)
            found = []
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError as exc:
                found.append("flock" if exc.errno == errno.EWOULDBLOCK else "flock " + str(exc.errno))
            for name, command, start in (("posix", fcntl.F_GETLK, 0), ("ofd", fcntl.F_OFD_GETLK, 1)):
                try:
                    answer = fcntl.fcntl(fd, command, flock_struct(fcntl.F_WRLCK, start))
                    if struct.unpack("hhqqi4x", answer)[0] != fcntl.F_UNLCK:
                        found.append(name)
                except OSError as exc:
                    found.append(name + " " + str(exc.errno))
            seen[path] = found
            os.close(fd)
        try:
            seen["/proc/locks"] = open("/proc/locks").read().count("\\n")
        except OSError as exc:
            seen["/proc/locks"] = "errno " + str(exc.errno)
        seen["inotify"] = watch()
        return seen

    role = os.environ["ROLE"]
    if role == "hold":  # the sender: locks every file and holds them while the other probes
        record, fds = hold()
        keep_opening(float(os.environ["HOLD"]))
    elif role == "probe":  # the receiver
        record = probe()
    else:  # both, in one grade: a child holds, this process probes (the probe is not blind)
        read, write = os.pipe()
        if os.fork() == 0:
            hold()
            os.write(write, b"x")
            keep_opening(30)
            os._exit(0)
        os.read(read, 1)
        record = probe()
    nonce = os.read(int(os.environ["TASKGYM_NONCE_FD"]), 64).decode()
    with os.fdopen(int(os.environ["TASKGYM_REPORT_FD"]), "w") as report:
        print(nonce, json.dumps(record), file=report)
""")


def test_concurrent_grades_share_no_file_lock(zygote: Backend, tmp_path: Path) -> None:
    """A grade that takes every kind of file lock (flock, POSIX record, open-file-description)
    on the files it shares with every other grade (the zygote's read-only inodes: a system
    binary and folder, the root, the grader's own folder, /dev/null), and keeps opening one,
    is refused each lock, and a grade running meanwhile that probes them (flock, F_GETLK,
    F_OFD_GETLK, /proc/locks, an inotify watch for opens) finds nothing: no lock or file
    event carries a bit from one grade to another."""
    folder = tmp_path / "grader"
    folder.mkdir()
    (folder / "helper.py").write_text("VERSION = 1\n")
    (folder / "g.py").write_text(LOCKS)
    argv = ["python3", "-I", "/.g/g.py"]

    def grade(role: str, **env: str) -> Any:
        spec = SandboxSpec(ro_binds={str(folder): "/.g"}, env={"ROLE": role, **env})
        run = run_grader(zygote, spec, argv, seed=None, timeout=60, preload=("helper",))
        assert run.path == "zygote" and run.records, run.log()
        return run.records[0]

    grade("probe")  # boots the zygote
    held: list[Any] = []
    thread = threading.Thread(target=lambda: held.append(grade("hold", HOLD="6")))
    thread.start()
    time.sleep(3)  # the holder's grade is forked and holds (or tried to take) its locks
    seen = grade("probe")
    thread.join(60)
    assert held, "the holding grade did not report"
    for path, results in held[0].items():
        assert results == ["ENOLCK"] * 3, (path, results)  # no grade may take a lock
    assert all(found == ["flock 37", "posix 37", "ofd 37"] for path, found in seen.items()
               if path.startswith("/") and path != "/proc/locks"), seen  # nor probe one (ENOLCK)
    assert seen["inotify"] == "errno 1", seen  # nor watch the holder open a shared file
    assert seen["/proc/locks"] in (0, "errno 13"), seen  # covered: lists no lock of the machine


def test_the_lock_probe_sees_locks_where_they_are_allowed(local_backend: Backend, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe is not blind: in a pre-started grader (an ordinary sandbox, where locks are
    allowed), a child that holds the locks is seen by every kind of probe on every file."""
    monkeypatch.setattr(local_backend, "grader_zygote", False)
    folder = tmp_path / "grader"
    folder.mkdir()
    (folder / "helper.py").write_text("VERSION = 1\n")
    (folder / "g.py").write_text(LOCKS)
    spec = SandboxSpec(ro_binds={str(folder): "/.g"}, env={"ROLE": "both"})
    run = run_grader(local_backend, spec, ["python3", "-I", "/.g/g.py"], seed=None, timeout=60,
                     preload=("helper",))
    assert run.path == "pool" and run.records, run.log()
    seen = run.records[0]
    for path in ("/usr/bin/env", "/.g/g.py", "/dev/null"):
        assert seen[path] == ["flock", "posix", "ofd"], (path, seen)
    assert seen["/"] and seen["/usr/lib"], seen  # folders: flock at least
    assert isinstance(seen["/proc/locks"], int) and seen["/proc/locks"] > 0  # the child's locks
    assert seen["inotify"] == "seen", seen  # the child's opens of a shared file
    close_warm_graders(local_backend)


def test_a_grade_outlives_the_last_lease_of_its_kind(zygote: Backend, cad_tasks: Any) -> None:
    """When the last env of a kind lets go of it (its close, or its finalizer at any garbage
    collection) while a grade of that kind runs, the zygote is closed only after that grade:
    closing it at once killed the grade (seen in the full suite, where a dropped env's
    finalizer ran mid-grade)."""
    from taskgym.domains.cad.verifier import grader_of
    from taskgym.sandbox.grading.warm_leases import Lease

    task = cad_tasks.get("plate-four-holes")
    made = grader_of(task, None)
    assert made.preload is not None
    lease = Lease(zygote, made.spec, made.argv, made.preload)
    first = grade_code(task, _solution(task).encode(), zygote)
    assert first.details["grader_path"] == "zygote" and len(live_zygotes(zygote)) == 1
    results: list[RewardResult] = []
    slow = "import time\ntime.sleep(4)\n" + _solution(task)
    thread = threading.Thread(target=lambda: results.append(grade_code(task, slow.encode(), zygote)))
    thread.start()
    time.sleep(2.0)  # the slow grade is forked and sleeping
    lease.close()  # the kind's last user lets go
    thread.join(120)
    assert results and results[0].score == 1.0, results and results[0].details.get("reason")
    assert results[0].details["grader_path"] == "zygote"
    deadline = time.monotonic() + 10
    while live_zygotes(zygote) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_zygotes(zygote) == []  # closed once its grade ended


def test_an_env_collected_while_the_zygotes_lock_is_held_does_not_deadlock(
        zygote: Backend) -> None:
    """A dropped env's finalizer runs wherever a garbage collection does: once inside the
    zygotes' sweep, under the zygotes' lock, which closing its lease takes again (every thread
    after it hung: seen in CI's fuzz test). The finalizer only queues the lease; a sweep closes
    it."""
    import gc

    from taskgym.sandbox.grading.warm_leases import USERS, close_dropped
    from taskgym.sandbox.local import zygote as zygotes

    env = taskgym.make("cad-cadquery-v0", sandbox=zygote)
    env.reset(options={"task_id": "plate-four-holes"})
    lease = env.unwrapped._lease
    assert lease is not None and lease in USERS[lease.key]
    del env

    def collect_under_the_lock() -> None:
        with zygotes._LOCK:
            gc.collect()

    collector = threading.Thread(target=collect_under_the_lock, daemon=True)
    collector.start()
    collector.join(30)
    assert not collector.is_alive(), "the finalizer deadlocked on the zygotes' lock"
    close_dropped()
    assert lease not in USERS.get(lease.key, [])
