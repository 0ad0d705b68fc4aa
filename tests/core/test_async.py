"""The asyncio API: ``areset`` / ``astep`` / ``aclose`` give the sync API's episodes, drive
the local sandbox from the event loop, and leave nothing behind."""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.core.env import TaskEnv
from taskgym.errors import MissingDependencyError, SandboxError
from taskgym.sandbox import SandboxSpec, get_backend
from taskgym.sandbox.host.cleanup import memory_root, runtime_root
from taskgym.sandbox.shell.plans import drive_plans

pytestmark = [pytest.mark.sandbox]

HELLO = Path(__file__).parents[2] / "fixtures" / "coding" / "harbor-hello"
ECHO = {"tool": "bash", "args": {"command": "echo hi"}}
SUBMIT = {"tool": "submit", "args": {}}
_TIMING = re.compile(r"\d+(\.\d+)?\s?(ms|s|sec|seconds)\b")

Runner = Callable[[Coroutine[Any, Any, Any]], Any]


def _uvloop_run(main: Coroutine[Any, Any, Any]) -> Any:
    try:
        import uvloop
    except ImportError:
        main.close()
        pytest.skip("uvloop is not installed (pip install 'taskgym[fast]'; "
                    "scripts/install.sh --test installs it)")
    return uvloop.run(main)


@pytest.fixture(params=["asyncio", "uvloop"])
def run(request: pytest.FixtureRequest) -> Runner:
    """Runs a coroutine on a new loop of each kind: the async API works on any asyncio loop,
    and the local session's driver is exercised on both. The kind is used once first: libuv
    opens descriptors of its own (a signal pipe) for the process at its first loop."""
    runner = asyncio.run if request.param == "asyncio" else _uvloop_run
    runner(asyncio.sleep(0))
    return runner


def _masked(text: str) -> str:
    return _TIMING.sub("<time>", text)


def _make(env_id: str, **kwargs: Any) -> TaskEnv:
    try:
        env = taskgym.make(env_id, **kwargs).unwrapped
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    assert isinstance(env, TaskEnv)
    return env


def _sync_episode(env: TaskEnv, task_id: str, actions: list[Any]) -> list[tuple[str, float]]:
    obs, _ = env.reset(options={"task_id": task_id})
    out = [(_masked(obs["text"]), 0.0)]
    for action in actions:
        obs, reward, terminated, truncated, _info = env.step(action)
        out.append((_masked(obs["text"]), reward))
        if terminated or truncated:
            break
    env.close()
    return out


async def _async_episode(env: TaskEnv, task_id: str, actions: list[Any]) -> list[tuple[str, float]]:
    obs, _ = await env.areset(options={"task_id": task_id})
    out = [(_masked(obs["text"]), 0.0)]
    for action in actions:
        obs, reward, terminated, truncated, _info = await env.astep(action)
        out.append((_masked(obs["text"]), reward))
        if terminated or truncated:
            break
    await env.aclose()
    return out


def _planned_episode(env: TaskEnv, task_id: str, actions: list[Any]) -> list[tuple[str, float]]:
    """The episode with each step a plan (``poll_step``), as the vector env's loop runs it."""
    obs, _ = env.reset(options={"task_id": task_id})
    out = [(_masked(obs["text"]), 0.0)]
    for action in actions:
        [stepped] = drive_plans([env.poll_step(action)])
        assert not isinstance(stepped, Exception), stepped
        obs, reward, terminated, truncated, _info = stepped
        out.append((_masked(obs["text"]), float(reward)))
        if terminated or truncated:
            break
    env.close()
    return out


@pytest.mark.slow
@pytest.mark.parametrize("env_id", sorted(taskgym.list_envs()))
def test_sync_async_and_planned_episodes_are_the_same(env_id: str) -> None:
    env = _make(env_id)
    task = env.task_set.get(env.task_set.ids()[0])
    actions = [{"tool": "bash", "args": {"command": "pwd; ls | head -3; echo $((6 * 7))"}},
               *env.oracle_actions(task)]
    sync = _sync_episode(env, task.id, actions)
    async_ = asyncio.run(_async_episode(_make(env_id), task.id, actions))
    planned = _planned_episode(_make(env_id), task.id, actions)
    assert async_ == sync and planned == sync
    assert sync[-1][1] > 0  # the oracle solved it: the last step was graded, on every path


def _fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def _children() -> set[int]:
    me = str(os.getpid())
    found = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            if fields[1] == me and fields[0] not in ("Z", "X"):
                found.add(int(entry.name))
    return found


def _ours() -> set[str]:
    prefix = f"{os.getpid()}-"
    roots = [root for root in (runtime_root(), memory_root()) if root is not None]
    return {p.name for root in roots for p in root.iterdir() if p.name.startswith(prefix)}


async def _episode(env: TaskEnv, i: int, errors: list[str]) -> None:
    try:
        await env.areset()
        for step in range(3):
            obs, _r, terminated, truncated, info = await env.astep(
                {"tool": "bash", "args": {"command": f"echo {i}-{step}"}})
            if obs["text"] != f"{i}-{step}\n[exit code 0]" or terminated or truncated:
                errors.append(f"episode {i} step {step}: {obs['text']!r} {info.get('error')}")
        if i % 2:
            _obs, reward, terminated, _t, _info = await env.astep(SUBMIT)
            if not terminated:
                errors.append(f"episode {i}: submit did not end it")
    except Exception as exc:
        errors.append(f"episode {i}: {type(exc).__name__}: {exc}")
    finally:
        await env.aclose()


def _settle_fds(quiet_sec: float = 2.0, limit_sec: float = 60.0) -> None:
    """Wait until this process's descriptor count has not changed for ``quiet_sec`` (what a
    backend refills in the background is in place), at most ``limit_sec``."""
    deadline = time.monotonic() + limit_sec
    count, since = _fd_count(), time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - since < quiet_sec:
        time.sleep(0.1)
        now = _fd_count()
        if now != count:
            count, since = now, time.monotonic()


def _concurrent_episodes(n: int, warm_up: bool = False, run: Runner = asyncio.run,
                         fd_slack: int = 0, **make: Any) -> None:
    """``n`` episodes at once on one loop: no error, and nothing left afterwards. With
    ``warm_up``, a first round fills what a backend keeps between episodes (the docker
    backend's pool of ready containers, its engine connections), and the second is checked;
    ``fd_slack`` descriptors may stay beyond the first round's (a bounded pool that the second
    round's peak may have grown: fewer than ``n``, so a leak per episode still fails)."""
    errors: list[str] = []

    def one_round() -> None:
        envs = [_make("coding-terminal-v0", tasks=str(HELLO), max_steps=10, **make)
                for _ in range(n)]

        async def main() -> None:
            await asyncio.gather(*(_episode(env, i, errors) for i, env in enumerate(envs)))

        run(main())

    if warm_up:
        one_round()
        _settle_fds()  # the pool refills in the background: count once it is done
    fds, children, dirs = _fd_count(), _children(), _ours()
    one_round()
    assert errors == []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (_children() - children or _fd_count() > fds + fd_slack):
        time.sleep(0.1)
    assert _children() - children == set()
    assert _fd_count() <= fds + fd_slack
    assert _ours() - dirs == set()


@pytest.mark.slow
def test_200_concurrent_async_episodes_without_errors_or_leaks() -> None:
    _concurrent_episodes(200)


def test_20_concurrent_async_episodes_on_each_loop_leave_nothing(run: Runner) -> None:
    _concurrent_episodes(20, run=run)


def test_the_loop_keeps_running_while_a_command_runs(run: Runner) -> None:
    env = _make("coding-terminal-v0", tasks=str(HELLO))

    async def main() -> tuple[int, str]:
        await env.areset()
        ticks = 0
        stop = False

        async def ticker() -> None:
            nonlocal ticks
            while not stop:
                await asyncio.sleep(0.01)
                ticks += 1

        task = asyncio.create_task(ticker())
        try:
            obs, *_ = await env.astep({"tool": "bash", "args": {"command": "sleep 1; echo done"}})
        finally:
            stop = True
            await task
            await env.aclose()
        return ticks, obs["text"]

    ticks, text = run(main())
    assert text.startswith("done")
    # ~100 in one second on a quiet machine; a loop held by the command would tick once or twice
    assert ticks >= 20


def test_the_blocking_pool_is_bounded() -> None:
    import threading

    from taskgym.sandbox.host.blocking import max_threads, run_blocking

    lock = threading.Lock()
    running = peak = 0
    names: set[str] = set()

    def job() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
            names.add(threading.current_thread().name)
        time.sleep(0.02)
        with lock:
            running -= 1

    async def main() -> None:
        await asyncio.gather(*(run_blocking(job) for _ in range(4 * max_threads())))

    asyncio.run(main())
    assert 1 < peak <= max_threads()
    assert len(names) <= max_threads() and all(n.startswith("taskgym-blocking") for n in names)


# -- the session's async path behaves like its sync one --------------------------------------

BACKENDS = ["local", pytest.param("docker", marks=[pytest.mark.docker])]


def _session_run(commands: list[tuple[str, float | None]], backend: str = "local",
                 run: Runner = asyncio.run) -> list[Any]:
    spec = SandboxSpec(stream_limit_bytes=1 << 20)
    session = get_backend(backend).start(spec)

    async def main() -> list[Any]:
        return [await session.aexec(cmd, timeout=t) for cmd, t in commands]

    try:
        return run(main())
    finally:
        session.close()


@pytest.mark.parametrize("backend", BACKENDS)
def test_async_timeout_kills_the_command_and_the_shell_goes_on(backend: str, run: Runner) -> None:
    first, after = _session_run([("X=1; sleep 30", 1.0), ("echo $X", None)], backend, run)
    assert first.timed_out and first.exit_code == 124 and not first.restarted
    assert 0.9 < first.duration_sec < 5
    assert after.stdout == "1\n" and after.exit_code == 0


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("flood", ["yes", "yes >&2", "head -c 100000000 /dev/zero | tr '\\0' x"])
def test_async_runaway_output_is_stopped(flood: str, backend: str, run: Runner) -> None:
    result, after = _session_run([(flood, 30.0), ("echo ok", None)], backend, run)
    assert result.truncated and "output" in result.stderr and result.duration_sec < 10
    assert after.stdout == "ok\n"


def test_async_dead_shell_restarts_like_sync(run: Runner) -> None:
    spec = SandboxSpec()
    session = get_backend("local").start(spec)
    try:
        sync = session.exec("cd /tmp; exit 7")
        async_ = run(session.aexec("cd /tmp; exit 7"))
        after = run(session.aexec("pwd"))
    finally:
        session.close()
    for result in (sync, async_):
        assert result.restarted and result.exit_code == 7
    assert after.stdout == spec.workdir + "\n"


def test_concurrent_aexec_on_one_session_is_refused_and_cancel_recovers(run: Runner) -> None:
    session = get_backend("local").start(SandboxSpec())

    async def main() -> tuple[BaseException | Any, ...]:
        slow = asyncio.create_task(session.aexec("sleep 0.5; echo slow"))
        await asyncio.sleep(0.05)
        second = await asyncio.gather(session.aexec("echo two"), return_exceptions=True)
        first = await slow
        cancelled = asyncio.create_task(session.aexec("sleep 30"))
        await asyncio.sleep(0.2)
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        after = await session.aexec("echo after")
        return second[0], first, after

    try:
        second, first, after = run(main())
    finally:
        session.close()
    assert isinstance(second, SandboxError) and "one command at a time" in str(second)
    assert first.stdout == "slow\n"
    assert after.stdout == "after\n" and after.exit_code == 0


def test_concurrent_astep_on_one_env_is_an_error_observation(run: Runner) -> None:
    env = _make("coding-terminal-v0", tasks=str(HELLO))

    async def main() -> list[Any]:
        await env.areset()
        try:
            return await asyncio.gather(
                env.astep({"tool": "bash", "args": {"command": "sleep 0.3; echo one"}}),
                env.astep(ECHO))
        finally:
            await env.aclose()

    (one, *_), (two, *_rest) = run(main())
    assert one["text"].startswith("one")
    assert "one command at a time" in two["text"] and "error" in _rest[-1]


# -- docker -----------------------------------------------------------------------------------

@pytest.mark.docker
@pytest.mark.slow
def test_20_concurrent_async_episodes_on_docker() -> None:
    from docker.constants import DEFAULT_MAX_POOL_SIZE

    from taskgym.sandbox.docker.session import LIVE_SESSIONS

    # the engine client keeps up to DEFAULT_MAX_POOL_SIZE (10) idle connections for reuse
    _concurrent_episodes(20, warm_up=True, fd_slack=DEFAULT_MAX_POOL_SIZE, sandbox="docker")
    assert not LIVE_SESSIONS


@pytest.mark.docker
def test_sync_and_async_episodes_are_the_same_on_docker() -> None:
    env = _make("coding-terminal-v0", sandbox="docker")
    task = env.task_set.get(env.task_set.ids()[0])
    actions = [{"tool": "bash", "args": {"command": "pwd; echo $((6 * 7))"}},
               *env.oracle_actions(task)]
    sync = _sync_episode(env, task.id, actions)
    async_ = asyncio.run(_async_episode(_make("coding-terminal-v0", sandbox="docker"),
                                        task.id, actions))
    assert async_ == sync and sync[-1][1] > 0


# -- limits -----------------------------------------------------------------------------------

def _python(script: str) -> str:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(Path(taskgym.__file__).parents[1]),
                               os.environ.get("PYTHONPATH", "")])})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_local_backend_raises_the_soft_open_files_limit_to_the_hard_one() -> None:
    out = _python(
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (256, 4096))\n"
        "from taskgym.sandbox import get_backend\n"
        "get_backend('local')\n"
        "print(resource.getrlimit(resource.RLIMIT_NOFILE))\n")
    assert out.strip() == "(4096, 4096)"


@pytest.mark.slow
def test_running_out_of_descriptors_is_a_sandbox_error_naming_the_limit() -> None:
    out = _python(
        "import asyncio, resource, traceback\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))\n"
        "import taskgym\n"
        "from taskgym.errors import SandboxError\n"
        f"HELLO = {str(HELLO)!r}\n"
        "envs = [taskgym.make('coding-terminal-v0', tasks=HELLO).unwrapped for _ in range(60)]\n"
        "async def main():\n"
        "    got = await asyncio.gather(*(e.areset() for e in envs), return_exceptions=True)\n"
        "    errors = [g for g in got if isinstance(g, BaseException)]\n"
        "    others = [g for g in errors if not isinstance(g, SandboxError)]\n"
        "    assert errors and not others, ''.join(traceback.format_exception(others[0]))\n"
        "    print(str(errors[0]))\n"
        "    await asyncio.gather(*(e.aclose() for e in envs))\n"
        "asyncio.run(main())\n")
    assert "no file descriptor left (RLIMIT_NOFILE 300" in out and "hard limit" in out


def test_a_limit_too_low_for_the_shell_protocol_says_so() -> None:
    out = _python(
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (200, 200))\n"
        "from taskgym.errors import SandboxUnavailableError\n"
        "from taskgym.sandbox import get_backend\n"
        "try:\n"
        "    get_backend('local')\n"
        "except SandboxUnavailableError as exc:\n"
        "    print(exc)\n")
    assert "RLIMIT_NOFILE is 200" in out and "descriptor 251" in out


# -- the local session's event-loop driver: the status socket stays registered -------------

def test_one_session_on_loops_in_turn_mixed_with_exec_leaks_nothing(run: Runner) -> None:
    """The session's status socket stays registered with the loop between commands: a sync
    ``exec`` in between (its answer seen by the loop too), a new loop for the next command,
    a cancelled command, a restart, and the close leave no descriptor behind."""
    fds = _fd_count()
    session = get_backend("local").start(SandboxSpec())

    async def commands(tag: str) -> list[str]:
        out = [(await session.aexec(f"echo {tag}1")).stdout]
        out.append((await asyncio.to_thread(session.exec, f"echo {tag}2")).stdout)
        out.append((await session.aexec(f"echo {tag}3")).stdout)
        slow = asyncio.create_task(session.aexec("sleep 0.3; echo late"))
        await asyncio.sleep(0.1)
        slow.cancel()
        await asyncio.gather(slow, return_exceptions=True)
        await asyncio.sleep(0.4)  # the cancelled command's answer arrives with nobody waiting
        out.append((await session.aexec(f"echo {tag}4")).stdout)
        out.append((await session.aexec("exit 3")).stdout)  # a restart, in the pool
        out.append((await session.aexec(f"echo {tag}5")).stdout)
        return out

    try:
        assert run(commands("a")) == ["a1\n", "a2\n", "a3\n", "a4\n", "", "a5\n"]
        assert session.exec("echo sync").stdout == "sync\n"
        assert run(commands("b")) == ["b1\n", "b2\n", "b3\n", "b4\n", "", "b5\n"]
    finally:
        session.close()
    assert _fd_count() <= fds


def test_a_session_closed_from_another_thread_while_its_loop_runs(run: Runner) -> None:
    """``close`` from a thread while the loop that watches the session runs (an ``aclose``
    in the pool, a trainer's thread): the loop drops its watch itself, and nothing leaks."""
    fds = _fd_count()
    sessions = [get_backend("local").start(SandboxSpec()) for _ in range(3)]

    async def main() -> list[str]:
        out = [(await s.aexec("echo hi")).stdout for s in sessions]
        await asyncio.gather(*(asyncio.to_thread(s.close) for s in sessions))
        await asyncio.sleep(0.05)  # the drops handed to the loop run
        return out

    try:
        assert run(main()) == ["hi\n"] * 3
    finally:
        for s in sessions:
            s.close()
    assert _fd_count() <= fds
