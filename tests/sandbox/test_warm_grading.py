"""Warm graders (taskgym.sandbox.warm): a grade in a pre-started sandbox, or forked by a grader
zygote, sees nothing of an earlier grade, scores exactly as a cold grade, and no grader
sandbox outlives its env.

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
from taskgym.paths import envs_dir
from taskgym.sandbox import Backend, SandboxSpec
from taskgym.sandbox.docker.container import OWNER_LABEL
from taskgym.sandbox.grading import run_grader
from taskgym.sandbox.warm import close_warm_graders, warm_pools

pytest.importorskip("cadquery", reason="the cad extra is not installed: pip install 'taskgym[cad]'")

from taskgym.domains.cad.verifier import grade_code  # noqa: E402

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
def two_warm(monkeypatch: pytest.MonkeyPatch, backend: Backend, request: pytest.FixtureRequest
             ) -> Iterator[str]:
    """Each warm path: two pre-started graders per kind (the next grade's sandbox is already
    up, and waiting, while the current grade runs the agent's code), or the kind's grader
    zygote (local only), which forks every grade. Yields the path's name."""
    if request.param == "zygote" and backend.name != "local":
        pytest.skip("grader zygotes are a local-backend path")
    monkeypatch.setenv("TASKGYM_WARM_GRADERS", "2")
    monkeypatch.setenv("TASKGYM_GRADER_ZYGOTE", "1" if request.param == "zygote" else "0")
    close_warm_graders(backend)
    yield request.param
    close_warm_graders(backend)


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
        patch.setenv("TASKGYM_WARM_GRADERS", "0")
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
            patch.setenv("TASKGYM_WARM_GRADERS", "0")
            cold = grade_file(task, "part.stl", data, backend)
        grade_file(task, "part.stl", data, backend)
        _wait_ready(backend)
        warm = grade_file(task, "part.stl", data, backend)
        assert warm.details["grader_path"] == default_path(backend)
        assert _comparable(warm) == _comparable(cold)
        if data == target:
            assert warm.success and warm.details["timing"]["import_sec"] < 0.5


def _ours(pid: int) -> bool:
    """Whether ``pid`` descends from this process (other test runs may share the machine)."""
    for _ in range(64):
        if pid == os.getpid():
            return True
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid <= 1:
            return False
    return False


def _in_our_container(pid: int) -> bool:
    """Whether ``pid`` runs in a container this process started (its owner label)."""
    import docker

    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return False
    ids = [line.rsplit("/docker/", 1)[1].strip() for line in text.splitlines() if "/docker/" in line]
    if not ids:
        return False
    try:
        labels = docker.from_env().containers.get(ids[0]).labels
    except docker.errors.DockerException:
        return False
    return str(labels.get(OWNER_LABEL, "")).startswith(f"{os.getpid()}-")


def _grader_processes(backend: Backend) -> list[int]:
    """Grader stubs running that this process started (other test runs may share the
    machine): on the local backend its descendants, on docker those in its containers."""
    mine = _ours if backend.name == "local" else _in_our_container
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
                stub = b"warm_grader.py" in cmdline or b"grader_zygote.py" in cmdline
                if stub and mine(int(entry.name)):
                    found.append(int(entry.name))
            except OSError:
                pass
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
               if b"/.g/g.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
               and not Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"bwrap")]
    assert waiting
    for pid in waiting:
        os.kill(pid, signal.SIGKILL)
    time.sleep(0.5)
    assert _run_versioned(backend, folder)["version"] == 7
