"""Warm graders (taskgym.sandbox.grading.warm): a grade in a pre-started sandbox, or forked by a grader
zygote, sees nothing of an earlier grade, scores exactly as a cold grade, a burst of grades
takes one fresh grader each, the pool follows its users' demand, and no grader sandbox
outlives its env (nor its idle time).

Each test runs on both backends (``backend`` fixture: local, and docker under -m docker); the
carry-over attack runs on both warm paths (pool, and zygote on local).
"""

from __future__ import annotations

import os
import signal
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.errors import SandboxError
from taskgym.paths import envs_dir
from taskgym.sandbox import Backend, SandboxSpec
from taskgym.sandbox.grading import run_grader
from taskgym.sandbox.grading.warm import close_warm_graders, warm_pools
from taskgym.sandbox.grading.warm_leases import Lease

pytest.importorskip("cadquery", reason="the cad extra is not installed: pip install 'taskgym[cad]'")

from taskgym.domains.cad.verifier import grade_code, grader_of  # noqa: E402

MARK = "carry-marker"

ATTACK = textwrap.dedent(f"""
    import ctypes, os, subprocess, sys
    import cadquery as cq
    import geometry
    done = []
    home = os.environ.get("HOME", "/tmp")
    for folder in ("/tmp", "/app", home, "/dev/shm", home + "/.local/lib/python3.11/site-packages"):
        try:
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "{MARK}"), "w") as out:
                out.write("x")
            with open(os.path.join(folder, "sitecustomize.py"), "w") as out:
                out.write("import os; os.environ['CARRY_MARKER'] = 'site'\\n")
            done.append("file " + folder)
        except OSError:
            pass
    # processes meant to outlive the grade: a new session, and a double fork
    subprocess.Popen(["/bin/bash", "-c", "exec -a {MARK} sleep 600"], start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execv("/bin/bash", ["{MARK}", "-c",
                     "while :; do echo x > /tmp/{MARK}-loop; echo x > /app/{MARK}-loop; sleep 0.05; done"])
        os._exit(0)
    done.append("processes")
    # the grader's modules in memory: patch what the comparison and the next grade would use
    def patched(*args, **kwargs):
        return 1.0
    patched._carry = True
    cq.Shape.Volume = patched
    cq.Workplane.box = patched
    geometry.properties = patched
    sys.modules["carry_module"] = type(sys)("carry_module")
    os.environ["CARRY_MARKER"] = "1"
    done.append("patched")
    try:  # the grader's own memory (it is not dumpable: this fails)
        with open(f"/proc/{{os.getppid()}}/mem", "wb") as mem:
            mem.write(b"x")
        done.append("parent memory")
    except OSError:
        pass
    raise RuntimeError("ATTACK-DONE " + "; ".join(done))
""")

PROBE = textwrap.dedent(f"""
    import os, sys
    import cadquery as cq
    import geometry
    found = []
    home = os.environ.get("HOME", "/tmp")
    for folder in ("/tmp", "/app", home, "/dev/shm", home + "/.local/lib/python3.11/site-packages"):
        for name in ("{MARK}", "{MARK}-loop", "sitecustomize.py"):
            if os.path.lexists(os.path.join(folder, name)):
                found.append(os.path.join(folder, name))
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{{pid}}/cmdline", "rb") as cmdline:
                if b"{MARK}" in cmdline.read():
                    found.append("process " + pid)
        except OSError:
            pass
    for name, thing in (("Shape.Volume", cq.Shape.Volume), ("Workplane.box", cq.Workplane.box),
                        ("geometry.properties", geometry.properties)):
        if getattr(thing, "_carry", False):
            found.append("patched " + name)
    if "carry_module" in sys.modules:
        found.append("sys.modules")
    if "CARRY_MARKER" in os.environ:
        found.append("environment")
    if sorted(os.listdir("/app")) != ["part.py"]:
        found.append("workspace " + repr(sorted(os.listdir("/app"))))
    if found:
        raise RuntimeError("CARRIED OVER: " + ", ".join(found))
""")

VOLATILE = ("timing", "verifier_seconds", "verifier_cpu_seconds", "log", "grader_path")


@pytest.fixture(scope="module")
def cad_tasks() -> Any:
    return taskgym.make("cad-cadquery-v0").unwrapped.task_set  # type: ignore[attr-defined]


@pytest.fixture(params=["pool", "zygote"])
def two_warm(monkeypatch: pytest.MonkeyPatch, backend: Backend, cad_tasks: Any,
             request: pytest.FixtureRequest) -> Iterator[str]:
    """Each warm path: two pre-started graders of the CAD kind (two users expecting a grade:
    the next grade's sandbox is already up, and waiting, while the current grade runs the
    agent's code), or the kind's grader zygote (local only), which forks every grade. Yields
    the path's name."""
    if request.param == "zygote" and backend.name != "local":
        pytest.skip("grader zygotes are a local-backend path")
    monkeypatch.setattr(backend, "warm_graders", 2)
    monkeypatch.setattr(backend, "grader_zygote", request.param == "zygote", raising=False)
    close_warm_graders(backend)
    grader = grader_of(cad_tasks.get("plate-four-holes"))
    leases = [Lease(backend, grader.spec, grader.argv, grader.preload or ()) for _ in range(2)]
    for lease in leases:
        lease.expect()
    yield request.param
    for lease in leases:
        lease.close()
    close_warm_graders(backend)


@pytest.fixture
def pool_path(monkeypatch: pytest.MonkeyPatch, backend: Backend) -> None:
    """Grades take the pool even where a zygote would serve them (the pool's own tests)."""
    monkeypatch.setattr(backend, "grader_zygote", False, raising=False)


def default_path(backend: Backend) -> str:
    """The warm path a grade takes by default on ``backend``."""
    return "zygote" if backend.name == "local" else "pool"


def _solution(task: Task) -> str:
    return (task.path / "solution" / "solve.py").read_text()


def _comparable(result: RewardResult) -> tuple[Any, ...]:
    details = {k: v for k, v in result.details.items() if k not in VOLATILE}
    return result.score, result.success, result.components, details


def _cold(monkeypatch: pytest.MonkeyPatch, task: Task, code: str, backend: Backend) -> RewardResult:
    with monkeypatch.context() as patch:
        patch.setattr(backend, "warm_graders", 0)
        return grade_code(task, code.encode(), backend)


def _wait_ready(backend: Backend) -> None:
    for pool in warm_pools(backend):
        assert pool.ready(300)


def test_a_grade_sees_nothing_of_the_previous_one(two_warm: str, backend: Backend, cad_tasks: Any,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    task = cad_tasks.get("plate-four-holes")
    probe = PROBE + _solution(task)
    cold = _cold(monkeypatch, task, probe, backend)
    assert cold.success and cold.score == 1.0, cold.details.get("reason")
    grade_code(task, probe.encode(), backend)  # fills the pool (two pre-started graders)
    _wait_ready(backend)
    attack = grade_code(task, ATTACK.encode(), backend)
    reason = str(attack.details.get("reason"))
    assert attack.details["grader_path"] == two_warm
    assert "ATTACK-DONE" in reason, reason  # the attack ran, and planted what it could
    assert reason.count("file ") >= 4 and "processes" in reason and "patched" in reason, reason
    assert "parent memory" not in reason
    # the next grader was pre-started before the attack ran; the one after it was started after
    for _ in range(2):
        warm = grade_code(task, probe.encode(), backend)
        assert warm.details["timing"]["import_sec"] < 0.5  # it ran in a pre-started grader
        assert warm.details["grader_path"] == two_warm
        assert _comparable(warm) == _comparable(cold), warm.details.get("reason")
        _wait_ready(backend)


@pytest.mark.parametrize("task_id", ["plate-four-holes", "flanged-housing"])
def test_warm_and_cold_cad_grades_are_identical(backend: Backend, cad_tasks: Any, task_id: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    task = cad_tasks.get(task_id)
    wrong = "import cadquery as cq\nresult = cq.Workplane().box(40, 30, 8)\n"
    for code in (_solution(task), wrong, "raise ValueError('no part')\n"):
        cold = _cold(monkeypatch, task, code, backend)
        grade_code(task, code.encode(), backend)
        _wait_ready(backend)
        warm = grade_code(task, code.encode(), backend)
        assert warm.details["timing"]["import_sec"] < 0.5
        assert warm.details["grader_path"] == default_path(backend)
        assert cold.details["grader_path"] == "cold"
        assert _comparable(warm) == _comparable(cold)
    assert cold.score == 0.0


def test_warm_and_cold_mesh_grades_are_identical(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("trimesh", reason="the mesh extra is not installed")
    import trimesh

    from taskgym.core.task import load_task
    from taskgym.domains.mesh.verifier import grade_file

    task = load_task(envs_dir() / "mesh-trimesh-v0" / "tasks" / "plate-four-holes", "mesh")
    target = (task.path / "tests" / "target.stl").read_bytes()
    wrong = trimesh.creation.box((100, 60, 9)).export(file_type="stl")
    for data in (target, wrong, b"not a mesh"):
        with monkeypatch.context() as patch:
            patch.setattr(backend, "warm_graders", 0)
            cold = grade_file(task, "part.stl", data, backend)
        grade_file(task, "part.stl", data, backend)
        _wait_ready(backend)
        warm = grade_file(task, "part.stl", data, backend)
        assert warm.details["grader_path"] == default_path(backend)
        assert _comparable(warm) == _comparable(cold)
        if data == target:
            assert warm.success and warm.details["timing"]["import_sec"] < 0.5


def _containers(backend: Backend) -> set[str]:
    """The ids of the docker backend's containers (empty on other backends)."""
    if backend.name != "docker":
        return set()
    from taskgym.sandbox.docker.container import OWNER_LABEL

    api = backend.api  # type: ignore[attr-defined]
    return {c["Id"] for c in api.containers(
        all=True, filters={"label": f"{OWNER_LABEL}={backend.owner}"})}  # type: ignore[attr-defined]


def _descends_from_us(pid: int) -> bool:
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat[stat.rindex(")") + 2:].split()[1])
        if pid == os.getpid():
            return True
    return False


def _cmdline(pid: int) -> bytes:
    """The command line of ``pid``, empty once it has ended (a process listed a moment ago
    may be gone: a grader ends when its grade does)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _grader_processes(backend: Backend) -> list[int]:
    """Warm-grader processes of this test process (not another one's on a shared machine):
    local ones descend from it, docker ones run in its backend's containers."""
    containers = _containers(backend)
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                if b"warm_grader.py" not in cmdline and b"grader_zygote.py" not in cmdline:
                    continue
                cgroup = (entry / "cgroup").read_text()
            except OSError:
                continue
            if (any(c in cgroup for c in containers) if containers
                    else _descends_from_us(int(entry.name))):
                found.append(int(entry.name))
    return found


def test_no_grader_sandbox_outlives_its_env(backend: Backend) -> None:
    close_warm_graders()  # every backend's, so that the processes counted below are this env's
    env = taskgym.make("cad-cadquery-v0", sandbox=backend)
    env.reset(options={"task_id": "plate-four-holes"})
    code = _solution(env.unwrapped.task)  # type: ignore[attr-defined]
    _, reward, *_ = env.step({"tool": "submit", "args": {"code": code}})
    assert reward == 1.0
    _wait_ready(backend)
    pools = warm_pools(backend)  # a zygote serves the local backend's grades: no pool entry
    assert pools and sum(p.live() for p in pools) == (0 if default_path(backend) == "zygote" else 1)
    assert _grader_processes(backend)
    env.close()
    assert not warm_pools(backend)
    deadline = time.monotonic() + 30
    while _grader_processes(backend) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _grader_processes(backend)


def test_the_probe_sees_what_the_attack_plants(backend: Backend, cad_tasks: Any) -> None:
    """The probe is not blind: run in the attack's own sandbox, right after it, it finds all."""
    task = cad_tasks.get("plate-four-holes")
    both = ATTACK.replace('raise RuntimeError("ATTACK-DONE " + "; ".join(done))', "") + PROBE
    result = grade_code(task, both.encode(), backend)
    reason = str(result.details.get("reason"))
    assert "CARRIED OVER" in reason, reason
    for planted in (f"/tmp/{MARK}", f"/app/{MARK}", f"/dev/shm/{MARK}", "process ", "patched Shape.Volume",
                    "patched geometry.properties", "sys.modules", "environment", "workspace"):
        assert planted in reason, (planted, reason)


def _versioned_grader(folder: Path, version: int) -> None:
    folder.mkdir(exist_ok=True)
    (folder / "helper.py").write_text(f"VERSION = {version}\n")
    (folder / "g.py").write_text(textwrap.dedent("""
        import json, os, sys
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import helper
        nonce = os.read(int(os.environ["TASKGYM_NONCE_FD"]), 64).decode()
        with os.fdopen(int(os.environ["TASKGYM_REPORT_FD"]), "w") as report:
            print(nonce, json.dumps({"version": helper.VERSION, "pid": os.getpid()}), file=report)
    """))


def _run_versioned(backend: Backend, folder: Path) -> dict[str, Any]:
    run = run_grader(backend, SandboxSpec(ro_binds={str(folder): "/.g"}), ["python3", "-I", "/.g/g.py"],
                     seed=None, timeout=60, preload=("helper",))
    assert run.records, run.log()
    return run.records[0]


def test_a_grader_older_than_its_code_is_discarded(backend: Backend, tmp_path: Path) -> None:
    folder = tmp_path / "grader"
    _versioned_grader(folder, 1)
    assert _run_versioned(backend, folder)["version"] == 1
    _wait_ready(backend)  # a grader that imported helper at version 1 waits now
    _versioned_grader(folder, 2)
    stamp = time.time() + 5
    for path in folder.iterdir():
        os.utime(path, (stamp, stamp))
    assert _run_versioned(backend, folder)["version"] == 2


def test_a_dead_pre_started_grader_is_replaced_on_the_spot(backend: Backend, tmp_path: Path) -> None:
    folder = tmp_path / "grader"
    _versioned_grader(folder, 7)
    _run_versioned(backend, folder)
    _wait_ready(backend)
    waiting = [pid for pid in _grader_processes(backend)
               if b"/.g/g.py" in _cmdline(pid) and not _cmdline(pid).startswith(b"bwrap")]
    assert waiting
    for pid in waiting:
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    assert _run_versioned(backend, folder)["version"] == 7


def _counting_grader(folder: Path) -> None:
    """A grader whose preloaded module notes, at import (before any grade), an id of its own and
    the time; the script reports them, whether its process or /tmp served a grade before, then
    marks both as used."""
    folder.mkdir(exist_ok=True)
    (folder / "booted.py").write_text(
        "import os, time\nID = os.urandom(8).hex()\nAT = time.time()\nUSED = False\n")
    (folder / "g.py").write_text(textwrap.dedent("""
        import json, os, sys
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import booted
        nonce = os.read(int(os.environ["TASKGYM_NONCE_FD"]), 64).decode()
        record = {"id": booted.ID, "at": booted.AT, "used": booted.USED,
                  "tmp": os.path.exists("/tmp/served-a-grade")}
        booted.USED = True
        open("/tmp/served-a-grade", "w").close()
        with os.fdopen(int(os.environ["TASKGYM_REPORT_FD"]), "w") as report:
            print(nonce, json.dumps(record), file=report)
    """))


COUNTING = ["python3", "-I", "/.g/g.py"]


def _run_counting(backend: Backend, folder: Path) -> dict[str, Any]:
    run = run_grader(backend, SandboxSpec(ro_binds={str(folder): "/.g"}), COUNTING, seed=None,
                     timeout=60, preload=("booted",))
    assert run.records, run.log()
    return run.records[0]


def _lease(backend: Backend, folder: Path) -> Lease:
    return Lease(backend, SandboxSpec(ro_binds={str(folder): "/.g"}), COUNTING, ("booted",))


def _leftovers(backend: Backend) -> set[str]:
    """Grader processes, and this process's sandbox folders and cgroups (local) or containers
    (docker)."""
    found = {f"process {pid}" for pid in _grader_processes(backend)}
    if backend.name == "docker":
        pooled = {c.id for items in backend.pool.ready.values()  # type: ignore[attr-defined]
                  for c, _ in items}  # the agent sessions' own warm pool
        found |= {f"container {c}" for c in _containers(backend) - pooled}
    else:
        from taskgym.sandbox.host.cgroups import cgroup_parents
        from taskgym.sandbox.host.cleanup import runtime_root

        prefix = f"{os.getpid()}-"
        found |= {f"dir {p}" for p in runtime_root().iterdir() if p.name.startswith(prefix)}
        found |= {f"cgroup {c}" for parent in cgroup_parents() if parent.is_dir()
                  for c in parent.iterdir() if c.is_dir() and c.name.startswith(prefix)}
    return found


def _settled(backend: Backend, before: set[str], timeout: float = 30) -> set[str]:
    """What is left beyond ``before``, once removals had ``timeout`` seconds to happen."""
    deadline = time.monotonic() + timeout
    while (left := _leftovers(backend) - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_a_burst_of_grades_takes_a_fresh_pre_started_grader_each(
        pool_path: None, backend: Backend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    burst = 3
    monkeypatch.setattr(backend, "warm_graders", burst)
    close_warm_graders(backend)
    before = _leftovers(backend)
    folder = tmp_path / "grader"
    _counting_grader(folder)
    leases = [_lease(backend, folder) for _ in range(burst)]
    for lease in leases:  # three episodes that will grade: three graders boot
        lease.expect()
    _wait_ready(backend)
    (pool,) = warm_pools(backend)
    assert pool.live() == burst
    began = time.time()
    records = []
    for lease in leases:  # back to back, as a batch of episodes ending at once
        lease.settle()
        records.append(_run_counting(backend, folder))
    assert len({r["id"] for r in records}) == burst  # a different grader each time
    assert not any(r["used"] or r["tmp"] for r in records)  # none had served a grade before
    assert all(r["at"] < began for r in records)  # each was pre-started, before the burst
    _wait_ready(backend)
    assert pool.live() == 1  # nothing expected any more: one spare, not three
    for lease in leases:
        lease.close()
    assert not warm_pools(backend)
    assert not _settled(backend, before)


def test_the_pool_follows_its_users(pool_path: None, backend: Backend, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Sized by the users expecting a grade, capped by the backend's ``warm_graders``; one
    user's close leaves the others' graders waiting; the last one's closes the pool."""
    monkeypatch.setattr(backend, "warm_graders", 2)
    close_warm_graders(backend)
    before = _leftovers(backend)
    folder = tmp_path / "grader"
    _counting_grader(folder)
    first, second, third = (_lease(backend, folder) for _ in range(3))
    for lease in (first, second, third):
        lease.expect()
    _wait_ready(backend)
    (pool,) = warm_pools(backend)
    assert pool.live() == 2  # three expected, capped at two
    first.close()
    second.close()
    _wait_ready(backend)
    assert warm_pools(backend) == [pool] and pool.live() == 1  # the third user's is still there
    assert not _run_counting(backend, folder)["used"]
    third.settle()
    third.close()
    assert not warm_pools(backend)
    assert not _settled(backend, before)
    with pytest.raises(SandboxError, match="closed"):
        third.expect()


def test_a_grader_nobody_expects_is_stopped_once_idle(pool_path: None, backend: Backend, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(backend, "warm_idle_sec", 1.0)
    close_warm_graders(backend)
    before = _leftovers(backend)
    folder = tmp_path / "grader"
    _counting_grader(folder)
    _run_counting(backend, folder)  # a grade without a user: one spare boots after it
    _wait_ready(backend)
    (pool,) = warm_pools(backend)
    assert pool.live() == 1
    deadline = time.monotonic() + 30
    while warm_pools(backend) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not warm_pools(backend) and pool.live() == 0
    assert not _settled(backend, before)


def test_closing_one_env_keeps_the_graders_another_env_waits_for(pool_path: None, backend: Backend) -> None:
    """Two mesh envs of one backend: each reset pre-starts a grader; closing the first leaves
    the second's waiting, and its grade finds it warm."""
    pytest.importorskip("trimesh", reason="the mesh extra is not installed")
    close_warm_graders(backend)
    before = _leftovers(backend)
    envs = [taskgym.make("mesh-trimesh-v0", sandbox=backend) for _ in range(2)]
    for env in envs:
        env.reset(options={"task_id": "plate-four-holes"})
    _wait_ready(backend)
    (pool,) = warm_pools(backend)
    assert pool.live() == 2
    envs[0].close()
    assert warm_pools(backend) == [pool] and pool.live() >= 1
    for action in envs[1].unwrapped.oracle_actions(envs[1].unwrapped.task):  # type: ignore[attr-defined]
        *_, terminated, _, info = envs[1].step(action)
    reward = envs[1].unwrapped.last_reward  # type: ignore[attr-defined]
    assert terminated and reward.success, reward
    assert reward.details["timing"]["import_sec"] < 0.5  # the grader was waiting, imports done
    envs[1].close()
    assert not warm_pools(backend)
    assert not _settled(backend, before)


@pytest.fixture(params=["pool", "zygote"])
def warm_path(request: pytest.FixtureRequest, backend: Backend, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each warm path of ``backend`` (zygote: local only)."""
    if request.param == "zygote" and backend.name != "local":
        pytest.skip("grader zygotes are a local-backend path")
    monkeypatch.setattr(backend, "grader_zygote", request.param == "zygote", raising=False)
    return str(request.param)


def _answer(work: Any, write: int) -> None:
    """Write ``work()``'s value (or its traceback) as JSON to ``write`` (in the child)."""
    import json
    import traceback

    try:
        answer = {"value": work()}
    except BaseException:
        answer = {"error": traceback.format_exc()}
    os.write(write, json.dumps(answer).encode())


def _in_forked_child(work: Any, how: str) -> Any:
    """``work()``'s value (JSON), computed in a child forked from this process by ``how``
    (``os.fork``, or ``multiprocessing``'s ``fork`` start method); its failure raised here."""
    import json
    import multiprocessing
    import warnings

    read, write = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns of forking a threaded process: the point
        warnings.simplefilter("ignore", DeprecationWarning)
        if how == "multiprocessing":
            process = multiprocessing.get_context("fork").Process(target=_answer, args=(work, write))
            process.start()
        else:
            pid = os.fork()
            if pid == 0:  # the child: never returns into pytest
                try:
                    os.close(read)
                    _answer(work, write)
                finally:
                    os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    if how == "multiprocessing":
        process.join(30)
    else:
        os.waitpid(pid, 0)
    answer = json.loads(b"".join(chunks) or b'{"error": "the child wrote nothing"}')
    assert "error" not in answer, answer["error"]
    return answer["value"]


@pytest.mark.parametrize("how", ["os.fork", "multiprocessing"])
def test_a_forked_child_grades_with_its_own_graders_and_leaves_the_parents(
        warm_path: str, backend: Backend, tmp_path: Path, how: str) -> None:
    """A child forked from a process with warm graders (a pool's pre-started grader waiting,
    or a zygote running, and their booting threads) inherits none of them: it sees no pool
    and no zygote, its close touches nothing of the parent's, its grades run in graders of
    its own (its own booting thread boots the next ones), and the parent's waiting grader or
    zygote serves the parent's next grade as if the child had never been."""
    from taskgym.sandbox.local.zygote import live_zygotes

    close_warm_graders(backend)
    before = _leftovers(backend)
    folder = tmp_path / "grader"
    _counting_grader(folder)
    lease = _lease(backend, folder)
    try:
        lease.expect()
        first = _run_counting(backend, folder)
        _wait_ready(backend)
        zygotes = live_zygotes(backend)
        waiting = sum(p.live() for p in warm_pools(backend))
        assert (len(zygotes), waiting) == ((1, 0) if warm_path == "zygote" else (0, 1))
        forked_at = time.time()

        def child() -> dict[str, Any]:
            seen = [len(warm_pools(backend)), live_zygotes(backend)]
            close_warm_graders(backend)  # the child's cleanup: the parent's graders are not its
            lease.expect()  # an inherited env's next episode
            grades = [_run_counting(backend, folder)]
            booted = all(p.ready(120) for p in warm_pools(backend))
            grades.append(_run_counting(backend, folder))
            own = live_zygotes(backend)
            close_warm_graders(backend)
            return {"seen": seen, "grades": grades, "booted": booted, "own": own}

        got = _in_forked_child(child, how)
        assert got["seen"] == [0, []], got  # neither the parent's pool nor its zygote
        assert got["booted"], "the child's own booting thread never booted its graders"
        child_ids = {g["id"] for g in got["grades"]}
        assert first["id"] not in child_ids and not any(g["used"] or g["tmp"] for g in got["grades"])
        if warm_path == "zygote":
            assert len(got["own"]) == 1 and got["own"] != zygotes  # a zygote of its own
        # the parent's grader (its zygote, or the pre-started one) is intact and serves it
        assert live_zygotes(backend) == zygotes
        assert sum(p.live() for p in warm_pools(backend)) == waiting
        after = _run_counting(backend, folder)
        assert after["id"] not in child_ids and not after["used"] and not after["tmp"]
        if warm_path == "zygote":
            assert after["id"] == first["id"]  # forked by the same zygote
        else:
            assert after["at"] < forked_at  # the grader pre-started before the fork
    finally:
        lease.close()
    close_warm_graders(backend)
    assert not _settled(backend, before)
