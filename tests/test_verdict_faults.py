"""Faults injected from outside the sandbox end the episode with no verdict, of their class.

Each test breaks grading the way the environment can fail (the grading sandbox killed from the
host, a grader dependency hidden from the sandbox's view, a grader stalled in its own setup,
the host out of descriptors, the task's hidden tests broken), checks that the episode ends
with ``info["verdict"] == "none"`` and its class, that nothing is left behind, and that the
next episode on the same env is graded as usual. The attacks that break grading from inside
(tests/domains/coding/test_hacks.py) stay graded.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.agents import OracleAgent
from taskgym.domains.coding import verifier as coding_verifier
from taskgym.errors import SandboxError
from taskgym.evaluation import run_episode
from taskgym.sandbox import Backend, leftovers
from taskgym.sandbox.host.cleanup import cgroup_parents, runtime_root
from taskgym.sandbox.host.procs import children
from taskgym.sandbox.local import LocalBackend

CALC = Path(__file__).parent.parent / "fixtures" / "coding" / "calc"
SUBMIT = {"tool": "submit", "args": {}}
SLOW_CALC = {"tool": "write_file", "args": {"path": "calc.py", "content":
                                            "import time\ntime.sleep(30)\n"}}


def calc_task(folder: Path, verifier_timeout: int = 60) -> Path:
    """A copy of the calc fixture whose grade may run ``verifier_timeout`` seconds."""
    shutil.copytree(CALC, folder)
    toml = folder / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 60", f"timeout_sec = {verifier_timeout}"))
    return folder


def ours() -> dict[str, set[str]]:
    """This process's sandbox processes, runtime folders and cgroups."""
    prefix = f"{os.getpid()}-"
    cgroups = {str(c) for parent in cgroup_parents() if parent.is_dir()
               for c in parent.iterdir() if c.is_dir() and c.name.startswith(prefix)}
    return {"processes": {str(p) for p in children(os.getpid())},
            "runtime dirs": {str(p) for p in runtime_root().iterdir()
                             if p.name.startswith(prefix)},
            "cgroups": cgroups}


@pytest.fixture()
def env(tmp_path: Path) -> Iterator[Any]:
    """The calc task on the local sandbox."""
    made = taskgym.make("coding-terminal-v0", tasks=str(calc_task(tmp_path / "calc", 8)))
    yield made
    made.close()


@pytest.fixture()
def either_env(tmp_path: Path, backend: Backend) -> Iterator[Any]:
    """The calc task on each backend in turn."""
    made = taskgym.make("coding-terminal-v0", tasks=str(calc_task(tmp_path / "calc", 8)),
                        sandbox=backend)
    yield made
    made.close()


def no_verdict(env: Any, steps: list[dict[str, Any]], failure: str, reset: bool = True,
               repair: Any = None) -> dict[str, Any]:
    """Play ``steps`` then submit (after a reset, unless ``reset`` is False); the end must be
    a no-verdict of class ``failure`` and leave nothing behind; then, ``repair`` called, the
    next episode must score 1 with the oracle."""
    if reset:
        env.reset(seed=0)
    before = ours()
    for action in steps:
        *_, terminated, truncated, _ = env.step(action)
        assert not (terminated or truncated)
    obs, reward, terminated, truncated, info = env.step(SUBMIT)
    assert (info["verdict"], info.get("failure")) == ("none", failure), info
    assert (reward, terminated, truncated) == (0.0, True, False)
    assert info["reward"].verdict == "none" and info["reward"].failure == failure
    assert f"no verdict ({failure})" in obs["text"] and info["error"]
    after = ours()
    assert {kind: found - before[kind] for kind, found in after.items()} == {
        "processes": set(), "runtime dirs": set(), "cgroups": set()}
    assert not [p for p in leftovers() if p.name.startswith(f"{os.getpid()}-")]
    if repair is not None:
        repair()
    record = run_episode(env, OracleAgent(env))  # the env works again
    last = env.unwrapped.last_reward
    assert record.score == 1.0 and last.graded, (last.verdict, last.details)
    return info


@pytest.mark.sandbox
def test_grading_sandbox_killed_from_the_host_mid_grade(env: Any, monkeypatch) -> None:
    # the grader has started on the agent's code (which sleeps): a kill of bwrap's outer
    # process, which nothing inside can signal, is the host's doing
    launch = LocalBackend.launch

    def launch_then_kill(self: LocalBackend, spec: Any, command: list[str], *args: Any,
                         **kwargs: Any) -> Any:
        launched = launch(self, spec, command, *args, **kwargs)
        if "/.grader/runner.py" in command:
            timer = threading.Timer(2.0, os.kill, (launched.proc.pid, signal.SIGKILL))
            timer.start()
            timer.join()  # launch returns once the grader is past its start
        return launched

    monkeypatch.setattr(LocalBackend, "launch", launch_then_kill)
    info = no_verdict(env, [SLOW_CALC], "backend_lost", repair=monkeypatch.undo)
    assert "killed from outside" in info["error"]


@pytest.mark.sandbox
@pytest.mark.parametrize("controller_mb", [0, 1200], ids=["small-controller", "large-controller"])
def test_grader_dependency_hidden_from_the_sandbox(env: Any, tmp_path: Path, monkeypatch,
                                                   controller_mb: int) -> None:
    # the packages of the sandbox Python's pytest covered by an empty folder in the grading
    # sandbox's view of the system; with a controller holding more resident memory than the
    # grade's cap (as a long test run or a trainer does), whose pages a sandbox's ru_maxrss
    # counted until bwrap's exec: every grade then looked memory-full, so graded
    ballast = bytearray(controller_mb << 20)
    for page in range(0, len(ballast), 4096):
        ballast[page] = 1
    found = subprocess.run(["/usr/bin/python3", "-I", "-c", "import pytest, _pytest; "
                            "print(pytest.__file__); print(_pytest.__file__)"],
                           capture_output=True, text=True, check=True).stdout.split()
    hide = {}
    for number, file in enumerate(found):
        empty = tmp_path / f"empty{number}"
        empty.mkdir()
        hide[str(empty)] = str(Path(file).parent)
    run_grader = coding_verifier.run_grader

    def without_pytest(backend: Any, spec: Any, *args: Any, **kwargs: Any) -> Any:
        hidden = spec.model_copy(update={"ro_binds": {**spec.ro_binds, **hide}})
        return run_grader(backend, hidden, *args, **kwargs)

    monkeypatch.setattr(coding_verifier, "run_grader", without_pytest)
    info = no_verdict(env, [], "grader_dependency", repair=monkeypatch.undo)
    assert "cannot import pytest" in info["error"]


def test_grader_past_its_time_limit_in_its_own_setup(either_env: Any, tmp_path: Path,
                                                     monkeypatch) -> None:
    env = either_env
    # the grader stalls after "begun", before "started": nothing of the agent's ran yet
    grader = tmp_path / "grader"
    shutil.copytree(coding_verifier.GRADER_DIR, grader)
    runner = grader / "runner.py"
    source = runner.read_text()
    marker = "def main(channel):"  # the grader's body, right after the kit reported "begun"
    assert marker in source
    runner.write_text(source.replace(marker, marker + "\n    import time\n    time.sleep(600)"))
    monkeypatch.setattr(coding_verifier, "GRADER_DIR", grader)
    info = no_verdict(env, [], "grader_timeout", repair=monkeypatch.undo)
    assert "in its own setup" in info["error"]


@pytest.mark.sandbox
def test_grading_sandbox_that_cannot_start(env: Any, monkeypatch) -> None:
    launch = LocalBackend.launch

    def failing_for_the_grader(self: LocalBackend, spec: Any, command: list[str], *args: Any,
                               **kwargs: Any) -> Any:
        if "/.grader/runner.py" in command:
            raise SandboxError("bubblewrap failed to start the sandbox: bwrap: Creating new "
                               "namespace failed: Resource temporarily unavailable")
        return launch(self, spec, command, *args, **kwargs)

    monkeypatch.setattr(LocalBackend, "launch", failing_for_the_grader)
    info = no_verdict(env, [], "sandbox_start", repair=monkeypatch.undo)
    assert "could not start" in info["error"]


def test_grader_crash_in_its_own_setup(either_env: Any, tmp_path: Path, monkeypatch) -> None:
    env = either_env
    grader = tmp_path / "grader"
    shutil.copytree(coding_verifier.GRADER_DIR, grader)
    runner = grader / "runner.py"
    marker = "def main(channel):"  # the grader's body, right after the kit reported "begun"
    runner.write_text(runner.read_text().replace(marker, marker + "\n    os._exit(70)"))
    monkeypatch.setattr(coding_verifier, "GRADER_DIR", grader)
    info = no_verdict(env, [], "grader_crash", repair=monkeypatch.undo)
    assert "died in its own setup" in info["error"]


@pytest.mark.sandbox
def test_host_out_of_processes_at_grading(env: Any, monkeypatch) -> None:
    # the host's fork of bwrap refused with EAGAIN, as a full pid table or this user's
    # RLIMIT_NPROC (which root, running these tests, is exempt from) gives it
    popen = subprocess.Popen

    def no_process_left(args: Any, *rest: Any, **kwargs: Any) -> Any:
        if "/.grader/runner.py" in args:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        return popen(args, *rest, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", no_process_left)
    info = no_verdict(env, [], "host_resources", repair=monkeypatch.undo)
    assert "out of processes or memory" in info["error"]


@pytest.mark.sandbox
def test_host_out_of_descriptors_at_grading(env: Any) -> None:
    # this process's descriptor limit lowered from outside the sandbox, around the grade only
    env.reset(seed=0)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    step = env.step

    def starved_step(action: Any) -> Any:
        resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 1, hard))
        try:
            return step(action)
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    env.step = starved_step
    try:
        info = no_verdict(env, [], "host_resources", reset=False,
                          repair=lambda: delattr(env, "step"))
    finally:
        if "step" in vars(env):
            del env.step
    assert "descriptor" in info["error"]


def test_reference_tests_corrupted(either_env: Any) -> None:
    env = either_env
    env.reset(seed=0)
    test_file = env.unwrapped.task.path / "tests" / "test_calc.py"
    original = test_file.read_text()
    test_file.write_text(original + "\ndef broken(:\n")
    try:
        info = no_verdict(env, [], "reference", reset=False,
                          repair=lambda: test_file.write_text(original))
    finally:
        test_file.write_text(original)
    assert "do not compile" in info["error"]


def test_reference_tests_missing(either_env: Any) -> None:
    env = either_env
    env.reset(seed=0)
    tests = env.unwrapped.task.path / "tests"
    away = tests.with_name("tests.away")
    tests.rename(away)
    try:
        info = no_verdict(env, [], "reference", reset=False, repair=lambda: away.rename(tests))
    finally:
        if away.exists():
            away.rename(tests)
    assert "test_" in info["error"]


@pytest.mark.docker
def test_docker_engine_gone_mid_episode(tmp_path: Path, monkeypatch) -> None:
    # this process's engine client refuses every request, as a stopped dockerd does (the
    # shared engine other test runs use is left alone); the env's own backend, not a shared one
    import requests

    from taskgym.sandbox.docker import DockerBackend
    from taskgym.sandbox.docker.container import OWNER_LABEL

    backend = DockerBackend(pool_size=0)
    made = taskgym.make("coding-terminal-v0", tasks=str(calc_task(tmp_path / "calc", 30)),
                        sandbox=backend)

    def ours_in_docker() -> set[str]:
        return {c["Id"] for c in backend.api.containers(
            all=True, filters={"label": f"{OWNER_LABEL}={backend.owner}"})}

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise requests.exceptions.ConnectionError(
            "('Connection aborted.', FileNotFoundError(2, 'No such file or directory'))")

    before = ours_in_docker()  # this process's other backends' (a warm pool's)
    try:
        made.reset(seed=0)
        made.step({"tool": "bash", "args": {"command": "echo hi"}})
        monkeypatch.setattr(backend.api, "send", refused)
        *_, terminated, truncated, info = made.step(SUBMIT)
        assert (info["verdict"], info.get("failure"), terminated, truncated) == (
            "none", "backend_lost", True, False), info
        assert "docker engine" in info["error"]
        monkeypatch.undo()  # the engine is back
        record = run_episode(made, OracleAgent(made))
        assert record.score == 1.0
    finally:
        made.close()
        backend.close()
    deadline = time.monotonic() + 30
    while ours_in_docker() - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not ours_in_docker() - before


@pytest.mark.docker
def test_grading_container_killed_from_the_host_mid_grade(tmp_path: Path, docker_backend: Any,
                                                          monkeypatch) -> None:
    # the grader has started on the agent's code (which sleeps): the grading container killed
    # through the engine, as an operator or the host's OOM policy would
    made = taskgym.make("coding-terminal-v0", tasks=str(calc_task(tmp_path / "calc", 30)),
                        sandbox=docker_backend)
    fresh = type(docker_backend)._fresh

    def fresh_then_kill(self: Any, spec: Any, seed: Any) -> Any:
        session = fresh(self, spec, seed)
        if "/.grader" in spec.ro_binds.values():
            container = session._container
            threading.Timer(3.0, self.api.kill, (container.id,)).start()
        return session

    monkeypatch.setattr(type(docker_backend), "_fresh", fresh_then_kill)
    try:
        info = no_verdict(made, [SLOW_CALC], "backend_lost", repair=monkeypatch.undo)
    finally:
        made.close()
    assert "killed from outside" in info["error"]
