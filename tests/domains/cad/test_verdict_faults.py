"""The CAD grader's phases: its own setup failing is no verdict, the submitted script's is graded.

grade.py reports ``begun``, imports CadQuery and builds the reference, reports ``started``, and
only then runs the submitted script. Each fault here breaks the setup the way the environment
can (CadQuery hidden from the grading sandbox's view, the reference file corrupted, the grader
stalled or crashing in its setup): the episode ends with ``info["verdict"] == "none"`` and its
class, leaves nothing behind, and the next episode on the same env scores 1 with the oracle.
Scripts that crash, hang, kill their own grader or eat memory stay graded zeros.
"""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.agents import OracleAgent
from taskgym.core.task import load_task
from taskgym.domains.cad import verifier
from taskgym.evaluation import run_episode
from taskgym.paths import envs_dir
from taskgym.sandbox import Backend, leftovers
from taskgym.sandbox.grading import run as grading
from taskgym.sandbox.host.procs import children, descendants

MARKER = "def main(channel: Any, runner: int, go: int) -> None:"
"""The line of grade.py after which a fault is injected into its setup (its body runs right
after the grading kit reported "begun")."""


@pytest.fixture()
def task_dir(tmp_path: Path) -> Path:
    """plate-four-holes with a 40 s grading limit and a 5 s, 256 MB bound on the script."""
    folder = tmp_path / "plate-four-holes"
    shutil.copytree(envs_dir() / "cad-cadquery-v0" / "tasks" / "plate-four-holes", folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 180", "timeout_sec = 40")
                    + "run_timeout_sec = 5\nrun_memory_mb = 256\n")
    return folder


@pytest.fixture()
def env(task_dir: Path, backend: Backend) -> Iterator[Any]:
    made = taskgym.make("cad-cadquery-v0", tasks=str(task_dir), sandbox=backend)
    yield made
    made.close()


def processes() -> set[int]:
    return set(children(os.getpid()))


def no_verdict(env: Any, fault: Callable[[], None], repair: Callable[[], None],
               failure: str) -> dict[str, Any]:
    """Reset, inject ``fault``, submit the oracle's part: no verdict of class ``failure`` and
    nothing left behind; then, ``repair`` called, the oracle scores 1 again."""
    env.reset(seed=0)
    before = processes()
    fault()
    try:
        submit = env.unwrapped.oracle_actions(env.unwrapped.task)[0]
        obs, reward, terminated, truncated, info = env.step(submit)
    finally:
        repair()
    assert (info["verdict"], info.get("failure")) == ("none", failure), info
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert f"no verdict ({failure})" in obs["text"]
    assert not processes() - before
    assert not [p for p in leftovers() if p.name.startswith(f"{os.getpid()}-")]
    record = run_episode(env, OracleAgent(env))
    assert record.score == 1.0 and env.unwrapped.last_reward.graded
    return info


def patched_grader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, added: str) -> Callable[[], None]:
    """A fault: grade.py copied with ``added`` run right after it reported ``begun``."""
    folder = tmp_path / "inside"
    shutil.copytree(verifier.INSIDE_DIR, folder)
    grade = folder / "grade.py"
    source = grade.read_text()
    assert MARKER in source
    grade.write_text(source.replace(MARKER, MARKER + "\n    " + added))
    return lambda: monkeypatch.setattr(verifier, "INSIDE_DIR", folder)


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_cadquery_not_importable_in_the_grading_sandbox(env: Any, tmp_path: Path, warm: bool,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # OpenCascade's bindings (OCP), which CadQuery imports, covered by an empty folder in the
    # grading sandbox's view of the system
    import OCP

    empty = tmp_path / "empty"
    empty.mkdir()
    spec_of = verifier.grader_spec

    def without_cadquery(*args: Any, **kwargs: Any) -> Any:
        spec = spec_of(*args, **kwargs)
        return spec.model_copy(update={"ro_binds": {
            **spec.ro_binds, str(empty): str(Path(OCP.__file__).parent)}})

    def fault() -> None:
        monkeypatch.setattr(verifier, "grader_spec", without_cadquery)
        if not warm:  # a cold grade; on the warm paths the preload skips what it cannot import
            monkeypatch.setattr(grading, "pool_size", lambda backend: 0)

    info = no_verdict(env, fault, monkeypatch.undo, "grader_dependency")
    assert "No module named 'OCP" in info["error"]
    # warm or cold, grade.py's own setup is what reports it (a preload leaves it to the grader)
    assert "cannot import the CAD grader's libraries" in info["error"]


def test_reference_corrupted(env: Any, task_dir: Path) -> None:
    reference = task_dir / "tests" / "reference.py"
    original = reference.read_text()
    info = no_verdict(env, lambda: reference.write_text(original + "\nresult = None(\n"),
                      lambda: reference.write_text(original), "reference")
    assert "reference part is at fault" in info["error"]


def test_grader_stalled_in_its_setup(env: Any, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    fault = patched_grader(tmp_path, monkeypatch, "time.sleep(600)")
    info = no_verdict(env, fault, monkeypatch.undo, "grader_timeout")
    assert "in its own setup" in info["error"]


def test_grader_crashing_in_its_setup(env: Any, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    fault = patched_grader(tmp_path, monkeypatch, "os._exit(70)")
    info = no_verdict(env, fault, monkeypatch.undo, "grader_crash")
    assert "died in its own setup" in info["error"]


@pytest.mark.hacks
@pytest.mark.parametrize("code", [
    "raise SystemExit('crash')\n",
    "import os\nos.abort()\n",
    "while True:\n    pass\n",
    "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\n",
    "import os, signal\nos.killpg(0, signal.SIGKILL)\nos.kill(-1, signal.SIGKILL)\n",
    "chunks = []\nwhile True:\n    chunks.append(bytearray(50_000_000))\n",
], ids=["crash", "abort", "hang", "kill-its-grader", "kill-everything", "memory"])
def test_a_script_that_breaks_its_grade_is_graded_zero(backend: Backend, task_dir: Path,
                                                       code: str) -> None:
    result = verifier.grade_code(load_task(task_dir, "cad"), code.encode(), backend)
    assert (result.verdict, result.score, result.gate) == ("graded", 0.0, False), result


def _cgroup_of(pid: str) -> str:
    """The cgroup lines of ``pid``, empty once it has ended (listed a moment before)."""
    try:
        return Path(f"/proc/{pid}/cgroup").read_text(errors="replace")
    except OSError:
        return ""


def worker_servers(session: Any) -> list[int]:
    """Host pids of the worker server in ``session``'s sandbox: this process's descendants on
    the local backend, the processes in the session's container on docker."""
    container = getattr(session, "_container", None)
    if container is None:
        found = descendants(os.getpid())
    else:
        found = [int(p) for p in os.listdir("/proc") if p.isdigit()
                 and container.id in _cgroup_of(p)]
    servers = []
    for pid in found:
        try:
            if (b"worker.py\0start" in Path(f"/proc/{pid}/cmdline").read_bytes()
                    and os.getsid(pid) == pid):
                servers.append(pid)
        except OSError:
            continue
    return servers


@pytest.mark.hacks
def test_worker_killed_from_the_host_mid_episode_stays_graded(env: Any) -> None:
    # a SIGKILL, the way the host's OOM killer or an operator ends a process, sent from outside
    # the sandbox: nothing the worker or the env sees tells it from the agent's own `kill -9`
    # (docs/security.md, "Verdicts"), so the tool is gone and the episode stays graded
    env.reset(seed=0)
    before = processes()
    solve = env.unwrapped.oracle_actions(env.unwrapped.task)[0]["args"]["code"]
    *_, info = env.step({"tool": "run_cadquery", "args": {"code": solve}})
    assert not info.get("error"), info
    session = env.unwrapped.session
    servers = worker_servers(session)
    assert len(servers) == 1, servers
    os.kill(servers[0], signal.SIGKILL)
    obs, reward, terminated, truncated, info = env.step({"tool": "run_cadquery",
                                                         "args": {"code": solve}})
    assert "not running" in obs["text"] and info["error"], obs
    assert (reward, terminated, truncated) == (0.0, False, False)
    obs, reward, terminated, truncated, info = env.step({"tool": "submit", "args": {"code": solve}})
    assert (info["verdict"], reward, terminated) == ("graded", 1.0, True), info
    assert not worker_servers(session)  # its sandbox (container) is gone too
    assert not processes() - before
    assert not [p for p in leftovers() if p.name.startswith(f"{os.getpid()}-")]
    record = run_episode(env, OracleAgent(env))
    assert record.score == 1.0 and env.unwrapped.last_reward.graded
