"""The docker backend's own promises: hardening, warm pool, labels, reaper, no leaks."""

from __future__ import annotations

import contextlib
import copy
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gymnasium.utils.env_checker import check_env

import taskgym
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.docker import DockerBackend, DockerSession
from taskgym.sandbox.docker.container import KEEPER_UID, LABEL, OWNER_LABEL
from taskgym.sandbox.host.procs import SANDBOX_UID
from taskgym.sandbox.host.python_view import PythonView

pytestmark = pytest.mark.docker


@pytest.fixture()
def pooled() -> Iterator[DockerBackend]:
    backend = DockerBackend(pool_size=1)
    yield backend
    backend.close()


def _ours(backend: DockerBackend, owner: str | None = None) -> list[dict[str, Any]]:
    label = f"{OWNER_LABEL}={owner or backend.owner}"
    found: list[dict[str, Any]] = backend.api.containers(filters={"label": label})
    return found


def _wait(condition: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return bool(condition())


def test_the_container_is_hardened(docker_backend: DockerBackend) -> None:
    spec = SandboxSpec(memory_mb=300, pids=50)
    with docker_backend.start(spec) as session:
        assert isinstance(session, DockerSession)
        info = docker_backend.api.inspect_container(session._container.id)
        assert session.exec("id -u; id -g").stdout == f"{SANDBOX_UID}\n{SANDBOX_UID}\n"
        # the status helper's tmpfs is root's: the agent cannot replace what starts its shells
        changed = session.exec("echo x > /.taskgym-bin/status-connect; touch /.taskgym-bin/new; "
                               "rm -f /.taskgym-bin/status-connect; ls /.taskgym-bin")
        assert changed.stdout == "status-connect\n" and "denied" in changed.stderr, changed
        assert session.exec("exit 5").restarted and session.exec("echo ok").stdout == "ok\n"
    host = info["HostConfig"]
    assert host["NetworkMode"] == "none" and host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert any(opt.startswith("seccomp=") for opt in host["SecurityOpt"])
    assert host["ReadonlyRootfs"] and host["Init"] and not host["Privileged"]
    assert host["Memory"] == host["MemorySwap"] == 300 << 20
    assert host["PidsLimit"] == 50
    assert not host.get("Binds") and not info["Mounts"], "a host path is mounted"
    assert set(host["Tmpfs"]) == {"/app", "/tmp", "/.taskgym", "/.taskgym/o", "/.taskgym/e",
                                  "/.taskgym-bin"}
    # init and the main process run as a second unprivileged user the sandbox's cannot signal
    assert info["Config"]["User"] == f"{KEEPER_UID}:{KEEPER_UID}" != f"{SANDBOX_UID}:{SANDBOX_UID}"
    assert info["Config"]["Labels"][LABEL] == "1"
    assert info["Config"]["Labels"][OWNER_LABEL] == docker_backend.owner


def test_the_pool_hands_out_a_started_container_and_is_drained(pooled: DockerBackend) -> None:
    spec = SandboxSpec()
    pooled.start(spec).close()  # the first start is cold and asks the pool to fill
    shape = pooled.shape(spec)
    assert _wait(lambda: len(pooled.pool.ready.get(shape, [])) == 1, 60), "the pool did not fill"
    ready_id = pooled.pool.ready[shape][0][0].id
    with pooled.start(spec) as session:
        assert isinstance(session, DockerSession) and session._container.id == ready_id
        assert session.exec("echo warm").stdout == "warm\n"
    assert _wait(lambda: len(pooled.pool.ready.get(shape, [])) == 1, 60), "no refill"
    pool_ids = {container.id for container, _shell in pooled.pool.ready[shape]}
    pooled.close()
    assert _wait(lambda: not pool_ids & {c["Id"] for c in _ours(pooled)}, 30), \
        "close() left pool containers running"


def test_fork_bomb_is_contained(docker_backend: DockerBackend) -> None:
    with docker_backend.start(SandboxSpec(pids=64)) as box:
        assert isinstance(box, DockerSession)
        box.exec("bomb() { bomb | bomb & }; bomb", timeout=5)
        peak = 0
        for _ in range(20):
            peak = max(peak, len(box._container.processes()))
            time.sleep(0.05)
        assert peak <= 64, peak
        with docker_backend.start(SandboxSpec()) as other:  # the host still starts sandboxes
            assert other.exec("echo fine").stdout == "fine\n"


def test_stop_kills_orphans_adopted_by_init(docker_backend: DockerBackend,
                                            tmp_path: Path) -> None:
    with docker_backend.start(SandboxSpec()) as box:
        assert isinstance(box, DockerSession)
        box.exec("echo kept > f; (sleep 888 &); (setsid sleep 889 &); "
                 "(nohup sleep 890 >/dev/null 2>&1 &)")
        assert len(box._container.processes()) >= 4  # the shell and three orphans
        box.stop()
        assert not box.alive and not box._container.processes()
        box.export_workspace(tmp_path / "out")
        assert (tmp_path / "out" / "f").read_text() == "kept\n"


def test_a_pause_that_outlives_its_unpause_is_thawed(docker_backend: DockerBackend,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine can finish a pause after the client's unpause failed (seen under load in CI:
    the next exec met "container is paused"); stopping the shell leaves the container running."""
    with docker_backend.start(SandboxSpec()) as box:
        assert isinstance(box, DockerSession)
        api = box._container.api
        unpause = api.unpause
        failures = []

        def unpause_failing_once(container: str) -> None:
            if not failures:
                failures.append(container)
                raise RuntimeError("the engine did not answer in time")
            unpause(container)

        monkeypatch.setattr(api, "unpause", unpause_failing_once)
        box.exec("sleep 777 &")
        box.restore(box.snapshot())
        assert failures and not api.inspect_container(box._container.id)["State"]["Paused"]
        assert box.exec("echo thawed").stdout == "thawed\n"


_HOLDER = """
import sys, time
from taskgym.sandbox import SandboxSpec
from taskgym.sandbox.docker import DockerBackend
backend = DockerBackend(pool_size=1)
session = backend.start(SandboxSpec())
session.exec("sleep 1000 & setsid sleep 1001 & echo")
backend.start(SandboxSpec())
print(backend.owner, flush=True)
time.sleep(600)
"""


def test_a_killed_run_leaves_nothing_running(docker_backend: DockerBackend) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER], stdout=subprocess.PIPE, env=env,
                              text=True)
    try:
        assert holder.stdout is not None
        owner = holder.stdout.readline().strip()
        assert owner, "the holder did not start"
        assert _wait(lambda: len(_ours(docker_backend, owner)) >= 2, 60), "no pool container"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        if holder.stdout is not None:
            holder.stdout.close()
    assert _wait(lambda: not _ours(docker_backend, owner), 30), "containers outlived SIGKILL"


def test_the_reaper_removes_containers_of_dead_owners(docker_backend: DockerBackend) -> None:
    api = docker_backend.api
    orphan = api.create_container(
        "taskgym/base", command=["sleep", "600"], labels={LABEL: "1", OWNER_LABEL: "999999999-1"},
        host_config=api.create_host_config(network_mode="none"))["Id"]
    mine = api.create_container(
        "taskgym/base", command=["sleep", "600"],
        labels={LABEL: "1", OWNER_LABEL: docker_backend.owner},
        host_config=api.create_host_config(network_mode="none"))["Id"]
    try:
        api.start(orphan)
        api.start(mine)
        DockerBackend(pool_size=0).close()  # a new backend reaps at start-up
        ids = {c["Id"] for c in api.containers(all=True)}
        assert orphan not in ids, "the orphan survived the reaper"
        assert mine in ids, "the reaper removed a live owner's container"
    finally:
        for container in (orphan, mine):
            try:
                api.remove_container(container, force=True)
            except Exception:  # already removed by the reaper
                pass


def test_a_task_dockerfile_builds_once_per_content(docker_backend: DockerBackend,
                                                   tmp_path: Path) -> None:
    folder = tmp_path / "env"
    folder.mkdir()
    (folder / "Dockerfile").write_text(textwrap.dedent("""\
        FROM taskgym/base
        RUN mkdir -p /usr/local/share/task && echo built > /usr/local/share/task/marker
        """))
    spec = SandboxSpec(image=str(folder))
    with docker_backend.start(spec) as session:
        assert session.exec("cat /usr/local/share/task/marker").stdout == "built\n"
    first = docker_backend.image(spec)
    assert first.startswith("taskgym/task:")
    (folder / "Dockerfile").write_text((folder / "Dockerfile").read_text() + "ENV CHANGED=1\n")
    changed = DockerBackend(pool_size=0)
    try:
        assert changed.image(spec) != first, "a changed folder reused the old image"
    finally:
        changed.close()
        for tag in {first, changed.image(spec)}:
            docker_backend.client.images.remove(tag, force=True)


def test_an_image_keeps_its_own_path(docker_backend: DockerBackend, tmp_path: Path) -> None:
    """The shell, a one-shot run and a restarted shell get the image's ``ENV PATH``, not the
    host's interpreter folder: a tool the image installs off the default PATH is found."""
    folder = tmp_path / "env"
    folder.mkdir()
    path = "/opt/taskgym-tool/bin:/usr/local/bin:/usr/bin:/bin"
    (folder / "Dockerfile").write_text(textwrap.dedent(f"""\
        FROM taskgym/base
        RUN mkdir -p /opt/taskgym-tool/bin && printf '#!/bin/sh\\necho tool ran\\n' \\
            > /opt/taskgym-tool/bin/tg-tool && chmod 755 /opt/taskgym-tool/bin/tg-tool
        ENV PATH={path}
        """))
    tag = None
    try:
        for spec in (SandboxSpec(image=str(folder)), SandboxSpec(image=str(folder), host_python=True),
                     SandboxSpec(image=str(folder), ro_binds={str(tmp_path): "/.extra"})):
            with docker_backend.start(spec) as session:
                tag = docker_backend.image(spec)
                assert session.exec('echo "$PATH"; tg-tool').stdout == f"{path}\ntool ran\n"
                assert session.exec("kill -9 $$", timeout=10).restarted  # its replacement has it too
                assert session.exec('echo "$PATH"').stdout == f"{path}\n"
        result, _ = docker_backend.run(SandboxSpec(image=str(folder)), ["tg-tool"], timeout=30)
        assert result.stdout == "tool ran\n", result
        with docker_backend.start(SandboxSpec(image=str(folder), env={"PATH": "/bin"})) as session:
            assert session.exec('echo "$PATH"').stdout == "/bin\n"  # the spec's own PATH wins
    finally:
        if tag is not None:
            docker_backend.client.images.remove(tag, force=True)


def test_images_build_and_doctor_report_the_images(capsys: pytest.CaptureFixture[str]) -> None:
    from taskgym.cli.main import main
    from taskgym.sandbox.docker.images import local_tag

    assert main(["images", "build", "coding-terminal-v0"]) == 0  # present: a cached rebuild
    capsys.readouterr()
    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for name in ("sandbox: docker", f"docker image: {local_tag('taskgym/base')}",
                 f"docker image: {local_tag('taskgym/coding-terminal-v0')}"):
        assert any(line.startswith("ok ") and name in line for line in lines), (name, lines)


def test_host_python_image_carries_the_installation_but_not_taskgym(
        docker_backend: DockerBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """The mechanism, on a small stand-in installation (the real one is gigabytes), in an
    image namespace of its own (the base tagged into it)."""
    import taskgym.sandbox.docker.host_python_image as host_python_image

    prefix = Path(tempfile.mkdtemp(prefix="taskgym-fake-python-", dir="/var/tmp"))
    prefix.chmod(0o755)  # as an installation is
    namespace = f"taskgym-test-{os.getpid()}"
    client = docker_backend.client
    try:
        (prefix / "bin").mkdir()
        interpreter = prefix / "bin" / "python3"
        interpreter.write_text("#!/bin/sh\necho stand-in python\n")
        interpreter.chmod(0o755)
        (prefix / "lib" / "taskgym").mkdir(parents=True)
        (prefix / "lib" / "taskgym" / "answers.py").write_text("ANSWER = 42\n")
        (prefix / "lib" / "pkg.py").write_text("X = 1\n")
        view = PythonView(str(interpreter), (str(prefix),), (str(prefix / "lib" / "taskgym"),))
        monkeypatch.setattr(host_python_image, "python_view", lambda _executable: view)
        monkeypatch.setenv("TASKGYM_IMAGE_NAMESPACE", namespace)
        client.images.get("taskgym/base").tag(f"{namespace}/base")
        host_python_image.build_host_python(client, str(interpreter), log=lambda *_: None)
        backend = DockerBackend(pool_size=0)
        with backend.start(SandboxSpec(host_python=True)) as box:
            out = box.exec(f"python3; cat {prefix}/lib/pkg.py; ls {prefix}/lib/taskgym 2>&1").stdout
        backend.close()
        assert out.startswith("stand-in python\nX = 1\n"), out  # first on PATH, files there
        assert "No such file" in out, f"taskgym's package went into the image: {out}"
    finally:
        shutil.rmtree(prefix)
        for name in ("host-python", "base"):
            with contextlib.suppress(Exception):
                client.images.remove(f"{namespace}/{name}", force=True)


@pytest.mark.parametrize("env_id", sorted(taskgym.list_envs()))
def test_every_env_id_makes_and_checks_on_docker(env_id: str) -> None:
    env = taskgym.make(env_id, sandbox="docker", max_steps=3)
    try:
        check_env(env.unwrapped)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", sorted(taskgym.list_envs()))
def test_every_env_grades_on_docker(env_id: str, oracle_then_null: Callable[..., Any]) -> None:
    """One curated task per env: its oracle scores 1 and a null agent 0 inside containers
    (grading runs in a one-shot container, with what that backend relays)."""
    env = taskgym.make(env_id, sandbox="docker")
    try:
        oracle_then_null(env, seed=0)
    finally:
        env.close()


def test_a_backend_crosses_into_worker_processes(docker_backend: DockerBackend) -> None:
    """Vector envs pickle their env factories: a backend arrives as a fresh one of its size."""
    clone = pickle.loads(pickle.dumps(docker_backend))
    try:
        assert isinstance(clone, DockerBackend) and clone is not docker_backend
        assert clone.pool.size == docker_backend.pool.size
        assert copy.deepcopy(docker_backend) is docker_backend  # make() copies its arguments
    finally:
        clone.close()


def test_threads_calling_the_engine_at_once_share_one_connection_pool(
        docker_backend: DockerBackend) -> None:
    """Requests for many different containers from 16 threads at once (as 16 envs resetting
    together make them) all get their answer: docker-py keyed its connection pools by URL in
    an LRU of 25 and closed the evicted ones while other threads read from them (an
    ``AttributeError`` out of urllib3, now and then out of a vector env's reset)."""
    import docker.errors

    api = docker_backend.api
    errors: list[BaseException] = []

    def inspect_many(thread: int) -> None:
        for number in range(20):
            try:
                api.inspect_container(f"taskgym-absent-{thread}-{number}")
            except docker.errors.NotFound:
                pass
            except BaseException as exc:  # noqa: BLE001 - what the test looks for
                errors.append(exc)

    threads = [threading.Thread(target=inspect_many, args=(i,)) for i in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
    assert len(api.adapters["http+docker://"].pools) == 1  # one pool for the engine, reused
