"""Vector envs: Gymnasium's AsyncVectorEnv with shared memory, and taskgym's own vector env."""

from __future__ import annotations

import asyncio
import copy
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import taskgym
from taskgym.checks import host_state, sleepers
from taskgym.core.shared_memory import SharedTexts, fit
from taskgym.core.vector import TaskVectorEnv

ENV_ID = "coding-terminal-v0"
SUBMIT = {"tool": "submit", "args": {}}
BAD: list[Any] = ["{not json", {"tool": "rm -rf"}, {"tool": "bash", "args": {"command": 7}},
                  None, {"tool": "read_file", "args": {"path": "../../etc/passwd"}}]

VectorFactory = Callable[[int], gym.vector.VectorEnv[Any, Any, Any]]
VECTORS: dict[str, VectorFactory] = {
    "native, gymnasium.make_vec": lambda n: gym.make_vec(
        f"taskgym/{ENV_ID}", num_envs=n, vectorization_mode="vector_entry_point"),
    "native, taskgym.make_vec": lambda n: taskgym.make_vec(ENV_ID, num_envs=n),
    "native, threads": lambda n: taskgym.make_vec(ENV_ID, num_envs=n, stepping="threads"),
    "native, 2 threads": lambda n: taskgym.make_vec(ENV_ID, num_envs=n, max_workers=2,
                                                    stepping="threads"),
    "AsyncVectorEnv, shared memory": lambda n: gym.vector.AsyncVectorEnv(
        [lambda: taskgym.make(ENV_ID) for _ in range(n)]),
    "SyncVectorEnv": lambda n: gym.vector.SyncVectorEnv(
        [lambda: taskgym.make(ENV_ID) for _ in range(n)]),
}


def echo(text: str) -> dict[str, Any]:
    return {"tool": "bash", "args": {"command": f"echo {text}"}}


@pytest.fixture()
def singles() -> Iterator[Callable[[int], list[gym.Env[Any, Any]]]]:
    """Single envs to compare a vector env's sub-envs with."""
    made: list[gym.Env[Any, Any]] = []

    def make(n: int) -> list[gym.Env[Any, Any]]:
        made.extend(taskgym.make(ENV_ID) for _ in range(n))
        return made[-n:]

    yield make
    for env in made:
        env.close()


# -- both vector paths -----------------------------------------------------------------------

@pytest.mark.sandbox
@pytest.mark.parametrize("how", list(VECTORS))
def test_sub_envs_see_what_single_envs_see(how: str, singles: Any) -> None:
    n = 3
    venv = VECTORS[how](n)
    alone = singles(n)
    try:
        obs, info = venv.reset(seed=5)
        expected = [env.reset(seed=5 + i) for i, env in enumerate(alone)]
        assert list(info["task_id"]) == [i["task_id"] for _, i in expected]
        assert list(info["_task_id"]) == [True] * n
        assert tuple(obs["text"]) == tuple(o["text"] for o, _ in expected)
        for step in range(1, 4):
            actions = tuple(echo(f"{i}-{step}-é漢") for i in range(n))
            obs, reward, terminated, truncated, info = venv.step(actions)
            assert tuple(obs["text"]) == tuple(
                env.step(a)[0]["text"] for env, a in zip(alone, actions, strict=True))
            assert tuple(obs["text"]) == tuple(f"{i}-{step}-é漢\n[exit code 0]" for i in range(n))
            assert list(info["step"]) == [step] * n and not (terminated.any() or truncated.any())
    finally:
        venv.close()


@pytest.mark.sandbox
@pytest.mark.parametrize("how", list(VECTORS))
def test_bad_actions_and_a_submit_leave_the_others_alone(how: str, singles: Any) -> None:
    venv = VECTORS[how](3)
    [alone] = singles(1)
    try:
        venv.reset(seed=[0, 1, 2])
        alone.reset(seed=1)
        obs, reward, terminated, truncated, info = venv.step((SUBMIT, BAD[0], echo("two")))
        bad_text = alone.step(BAD[0])[0]["text"]
        assert obs["text"][1] == bad_text and bad_text.startswith("error: ")
        assert obs["text"][0].startswith("submitted\n[graded: score=0.000")
        assert obs["text"][2] == "two\n[exit code 0]"
        assert list(terminated) == [True, False, False] and list(truncated) == [False] * 3
        assert list(reward) == [0.0, 0.0, 0.0]
        assert list(info["_reward"]) == [True, False, False]
        assert info["reward"][0].score == 0.0
        assert list(info["_error"]) == [False, True, False] and info["error"][1]
        assert list(info["_exit_code"]) == [False, False, True] and info["exit_code"][2] == 0

        # next step: sub-env 0 starts a new episode (its action is ignored), the others go on
        obs, reward, terminated, truncated, info = venv.step((echo("x"), BAD[1], echo("two")))
        assert list(info["step"]) == [0, 2, 2] and not terminated.any()
        assert obs["text"][1] == alone.step(BAD[1])[0]["text"]
        assert obs["text"][2] == "two\n[exit code 0]"
        new_task, new_text = str(info["task_id"][0]), obs["text"][0]
        for bad in BAD[2:]:
            obs = venv.step((echo("again"), bad, echo("two")))[0]
            assert obs["text"][1] == alone.step(bad)[0]["text"]
            assert (obs["text"][0], obs["text"][2]) == ("again\n[exit code 0]",
                                                        "two\n[exit code 0]")
        assert new_text == alone.reset(options={"task_id": new_task})[0]["text"]
    finally:
        venv.close()


@pytest.mark.sandbox
@pytest.mark.parametrize("how", ["native, taskgym.make_vec", "AsyncVectorEnv, shared memory"])
def test_close_leaves_no_sandbox_and_no_process(how: str) -> None:
    before = host_state()
    venv = VECTORS[how](3)
    workers = [p.pid for p in getattr(venv, "processes", [])]
    marker = f"{secrets.randbelow(10**6) + 10**6}.{secrets.randbelow(10**6)}"
    plant = {"tool": "bash", "args": {"command": f"(setsid sleep {marker} >/dev/null 2>&1 &) ; "
                                                 f"nohup sleep {marker} >/dev/null 2>&1 &"}}
    try:
        venv.reset(seed=0)
        venv.step((plant,) * 3)
        assert _wait(lambda: len(sleepers(marker)) == 6, 10), sleepers(marker)
    finally:
        venv.close()
    venv.close()  # twice is harmless
    assert _wait(lambda: not sleepers(marker) and not host_state() - before, 10)
    assert not host_state() - before
    for pid in workers:  # the sandboxes AsyncVectorEnv's worker processes made
        assert not host_state(pid), pid


@pytest.mark.sandbox
def test_the_native_vector_env_steps_its_envs_at_once() -> None:
    venv = taskgym.make_vec(ENV_ID, num_envs=4)
    try:
        venv.reset(seed=0)
        started = time.monotonic()
        obs = venv.step(({"tool": "bash", "args": {"command": "sleep 1; echo done"}},) * 4)[0]
        took = time.monotonic() - started
        assert tuple(obs["text"]) == ("done\n[exit code 0]",) * 4
        assert took < 3.5, f"4 sleeps of 1 s took {took:.1f} s: not run concurrently"
    finally:
        venv.close()


@pytest.mark.sandbox
def test_native_vector_env_conventions() -> None:
    venv = taskgym.make_vec(ENV_ID, num_envs=2, max_steps=2, tasks="generated:spec")
    try:
        assert isinstance(venv, TaskVectorEnv) and isinstance(venv, gym.vector.VectorEnv)
        assert venv.stepping == "loop"  # the default for local sandboxes
        assert venv.metadata["autoreset_mode"] == gym.vector.AutoresetMode.NEXT_STEP
        assert venv.spec is not None and venv.spec.id == f"taskgym/{ENV_ID}"
        assert venv.single_action_space == venv.envs[0].action_space
        obs, info = venv.reset(seed=[3, None])
        assert info["task_id"][0] == "spec-3" and len(obs["text"]) == 2
        # reset_mask resets only the sub-envs it names
        venv.step((echo("a"), echo("b")))
        obs, info = venv.reset(seed=[7, 8], options={"reset_mask": np.array([False, True])})
        assert list(info["_task_id"]) == [False, True] and info["task_id"][1] == "spec-8"
        assert obs["text"][0] == "a\n[exit code 0]"
        # the step limit truncates (and grades) like a single env's
        obs, reward, terminated, truncated, info = venv.step((echo("c"), echo("d")))
        assert list(truncated) == [True, False] and "step limit" in obs["text"][0]
        with pytest.raises(taskgym.ConfigError, match="1 actions for 2 sub-envs"):
            venv.step((echo("e"),))
        with pytest.raises(taskgym.ConfigError, match="3 seeds for 2 sub-envs"):
            venv.reset(seed=[1, 2, 3])
        with pytest.raises(taskgym.ConfigError, match=r"reset_mask'\] must be a numpy bool"):
            venv.reset(options={"reset_mask": np.array([False, False])})
        assert venv.get_attr("render_mode") == (None, None)
        assert all(0 < left <= 3600 for left in venv.call("remaining_seconds"))
    finally:
        venv.close()
    assert venv.closed


@pytest.mark.sandbox
def test_same_step_autoreset_reports_the_final_observation() -> None:
    venv = taskgym.make_vec(ENV_ID, num_envs=2, autoreset_mode="SameStep")
    try:
        venv.reset(seed=0)
        obs, reward, terminated, truncated, info = venv.step((SUBMIT, echo("b")))
        assert list(terminated) == [True, False]
        assert list(info["_final_obs"]) == [True, False]
        assert info["final_obs"][0]["text"].startswith("submitted\n[graded:")
        assert info["final_info"]["reward"][0].score == 0.0
        assert info["step"][0] == 0 and obs["text"][0] != info["final_obs"][0]["text"]
    finally:
        venv.close()


def test_unknown_ids_and_bad_sizes_are_clear_errors() -> None:
    with pytest.raises(taskgym.UnknownEnvError, match="Did you mean 'coding-terminal-v0'"):
        taskgym.make_vec("coding-terminl-v0", num_envs=2)
    with pytest.raises(taskgym.ConfigError, match="at least one sub-env"):
        TaskVectorEnv(ENV_ID, num_envs=0)
    with pytest.raises(taskgym.ConfigError, match="max_workers=0"):
        TaskVectorEnv(ENV_ID, num_envs=2, max_workers=0)


# -- the shared memory of text observations ---------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.text(), st.integers(min_value=1024, max_value=4096))
def test_fit_keeps_what_fits_and_cuts_the_middle_of_the_rest(text: str, capacity: int) -> None:
    data = fit(text, capacity)
    assert len(data) <= capacity
    cut = data.decode("utf-8", "surrogatepass")  # whole characters only
    if len(text.encode("utf-8", "surrogatepass")) <= capacity:
        assert cut == text
    else:
        head, note_and_tail = cut.split("\n[observation cut: ", 1)
        tail = note_and_tail.split("whole observations]\n", 1)[1]
        assert text.startswith(head) and text.endswith(tail)
        assert len(head.encode("utf-8", "surrogatepass")) >= (capacity - 300) // 2 - 3


def test_shared_memory_round_trip_and_a_cut_observation() -> None:
    space = gym.spaces.Dict({"text": taskgym.UnicodeText(shared_memory_bytes=1024)})
    memory = create_shared_memory(space, n=3)
    view = read_from_shared_memory(space, memory, n=3)
    assert isinstance(view["text"], SharedTexts) and tuple(view["text"]) == ("", "", "")
    long = "é" * 2000 + "[exit code 0]"
    for index, text in enumerate(["hi\n[exit code 0]", "\ud800 lone surrogate, 漢字", long]):
        write_to_shared_memory(space, index, {"text": text}, memory)
    texts = copy.deepcopy(view)["text"]  # what AsyncVectorEnv(copy=True) returns
    assert isinstance(texts, tuple) and texts[:2] == ("hi\n[exit code 0]",
                                                       "\ud800 lone surrogate, 漢字")
    assert texts[2].startswith("ééé") and texts[2].endswith("é[exit code 0]")
    assert "[observation cut: its 4,013 bytes of UTF-8 do not fit the 1,024 bytes" in texts[2]
    write_to_shared_memory(space, 0, {"text": "new"}, memory)
    assert view["text"][0] == "new" and texts[0] == "hi\n[exit code 0]"  # a view; a copy
    assert view["text"] == ("new", *texts[1:]) and view["text"][-1] == texts[2]


def test_the_capacity_comes_from_the_buffer_a_worker_writes_into() -> None:
    made = gym.spaces.Dict({"text": taskgym.UnicodeText(shared_memory_bytes=4096)})
    other = gym.spaces.Dict({"text": taskgym.UnicodeText()})  # a worker's own space
    memory = create_shared_memory(made, n=2)
    write_to_shared_memory(other, 1, {"text": "x" * 5000}, memory)
    assert len(read_from_shared_memory(made, memory, n=2)["text"][1]) <= 4096
    with pytest.raises(taskgym.ConfigError, match="at least 1024"):
        taskgym.UnicodeText(shared_memory_bytes=100)


# -- docker ----------------------------------------------------------------------------------

@pytest.mark.docker
@pytest.mark.parametrize("stepping", [None, "loop"])
def test_native_vector_env_on_docker(stepping: str | None) -> None:
    """Both ways (the loop's plans run docker's blocking exec in the bounded pool)."""
    from taskgym.sandbox.docker import DockerBackend
    from taskgym.sandbox.docker.container import OWNER_LABEL

    backend = DockerBackend(pool_size=0)

    def containers() -> set[str]:
        found = backend.api.containers(all=True, filters={"label": f"{OWNER_LABEL}={backend.owner}"})
        return {c["Id"] for c in found}

    before = containers()
    venv = taskgym.make_vec(ENV_ID, num_envs=2, sandbox=backend, stepping=stepping)
    # the default for docker: threads (its commands block, so a plan would take a pool thread)
    assert venv.stepping == "loop"  # docker's shells are waited on as local ones are
    try:
        obs, info = venv.reset(seed=0)
        assert len(containers() - before) == 2
        obs, reward, terminated, truncated, info = venv.step((echo("zero"), SUBMIT))
        assert obs["text"][0] == "zero\n[exit code 0]" and list(terminated) == [False, True]
        assert info["reward"][1].score == 0.0
        obs, reward, terminated, truncated, info = venv.step((BAD[0], echo("ignored")))
        assert obs["text"][0].startswith("error: ") and list(info["step"]) == [2, 0]
        assert venv.step((echo("a"), echo("b")))[0]["text"] == ("a\n[exit code 0]",
                                                              "b\n[exit code 0]")
    finally:
        venv.close()
    assert _wait(lambda: not containers() - before, 30), containers() - before
    backend.close()


# -- helpers ---------------------------------------------------------------------------------

def _wait(condition: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


@pytest.mark.sandbox
def test_batched_infos_are_what_gymnasium_builds() -> None:
    venv = taskgym.make_vec(ENV_ID, num_envs=3, autoreset_mode="SameStep")
    try:
        venv.reset(seed=0)
        reset_info = venv.envs[2].reset(seed=2)[1]
        infos = [(i, venv.envs[i].step(action)[4]) for i, action in
                 enumerate((SUBMIT, BAD[0], echo("x")))]
        infos.append((0, {"final_obs": {"text": "t"}, "final_info": infos[0][1], "step": 0}))
        for found in ([(2, reset_info)], infos[:3], infos[1:]):
            expected: dict[str, Any] = {}
            for i, info in found:
                expected = venv._add_info(expected, info, i)
            _assert_same(venv._batch_infos(found), expected)
    finally:
        venv.close()


def _assert_same(got: Any, expected: Any) -> None:
    if isinstance(expected, dict):
        assert isinstance(got, dict) and list(got) == list(expected)
        for key in expected:
            _assert_same(got[key], expected[key])
    else:
        assert isinstance(got, np.ndarray) and got.dtype == expected.dtype
        assert got.shape == expected.shape and all(
            a is b or a == b for a, b in zip(got.tolist(), expected.tolist(), strict=True))


@pytest.mark.sandbox
def test_an_exception_in_one_sub_env_is_raised_after_the_others_stepped() -> None:
    venv = taskgym.make_vec(ENV_ID, num_envs=3)

    def broken(action: Any) -> Any:
        raise RuntimeError("a bug in a wrapper")

    try:
        venv.reset(seed=0)
        venv.envs[1].step = broken  # type: ignore[method-assign]
        with pytest.raises(RuntimeError, match="a bug in a wrapper"):
            venv.step((echo("a"), echo("b"), echo("c")))
        del venv.envs[1].step  # type: ignore[attr-defined]
        obs, reward, terminated, truncated, info = venv.step((echo("a"), echo("b"), echo("c")))
        assert tuple(obs["text"]) == ("a\n[exit code 0]", "b\n[exit code 0]", "c\n[exit code 0]")
        assert list(info["step"]) == [2, 1, 2]  # the others had stepped
    finally:
        venv.close()


# -- stepping="loop": sub-envs' steps as plans, driven by one poll loop ---------------------

def _on_loop(venv: TaskVectorEnv, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record, per ``step`` call, whether it went through the loop."""
    used: list[bool] = []
    original = TaskVectorEnv._step_on_loop

    def spy(self: TaskVectorEnv, batch: list[Any]) -> Any:
        stepped = original(self, batch)
        used.append(stepped is not None)
        return stepped

    monkeypatch.setattr(TaskVectorEnv, "_step_on_loop", spy)
    return used


@pytest.mark.sandbox
def test_the_vector_env_steps_on_its_loop_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    venv = taskgym.make_vec(ENV_ID, num_envs=4, stepping="loop")
    used = _on_loop(venv, monkeypatch)
    try:
        venv.reset(seed=0)
        first = venv.step((echo("a"),) * 4)[0]  # Gymnasium's first-step check: from the threads
        started = time.monotonic()
        obs, _r, terminated, truncated, info = venv.step(
            ({"tool": "bash", "args": {"command": "sleep 1; echo done"}},) * 4)
        took = time.monotonic() - started
        assert used == [False, True]
        assert tuple(first["text"]) == ("a\n[exit code 0]",) * 4
        assert tuple(obs["text"]) == ("done\n[exit code 0]",) * 4
        assert not terminated.any() and not truncated.any() and list(info["step"]) == [2] * 4
        assert took < 3.5, f"4 sleeps of 1 s took {took:.1f} s: not run concurrently"
    finally:
        venv.close()


@pytest.mark.sandbox
def test_same_step_autoreset_on_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    venv = taskgym.make_vec(ENV_ID, num_envs=2, autoreset_mode="SameStep", stepping="loop")
    used = _on_loop(venv, monkeypatch)
    try:
        venv.reset(seed=0)
        venv.step((echo("a"), echo("a")))
        obs, reward, terminated, truncated, info = venv.step((SUBMIT, echo("b")))
        assert used == [False, True]
        assert list(terminated) == [True, False] and list(info["_final_obs"]) == [True, False]
        assert info["final_obs"][0]["text"].startswith("submitted\n[graded:")
        assert info["step"][0] == 0 and info["step"][1] == 2 and obs["text"][1] == "b\n[exit code 0]"
        obs, *_ = venv.step((echo("c"), echo("d")))  # the reset sub-env goes on
        assert tuple(obs["text"]) == ("c\n[exit code 0]", "d\n[exit code 0]")
    finally:
        venv.close()


@pytest.mark.sandbox
def test_what_the_loop_cannot_step_goes_through_the_threads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A user's wrapper is stepped by the threads, with the same observations; a step called
    from inside a running event loop is stepped by the loop all the same (it blocks that
    event loop, as any sync call does)."""

    class Tagged(gym.Wrapper[Any, Any, Any, Any]):
        def step(self, action: Any) -> Any:
            obs, *rest = self.env.step(action)
            return {"text": "tagged " + obs["text"]}, *rest

    venv = taskgym.make_vec(ENV_ID, num_envs=2, stepping="loop")
    used = _on_loop(venv, monkeypatch)
    try:
        venv.reset(seed=0)
        venv.step((echo("a"), echo("a")))
        venv.envs[1] = Tagged(venv.envs[1])
        obs = venv.step((echo("b"), echo("c")))[0]
        assert tuple(obs["text"]) == ("b\n[exit code 0]", "tagged c\n[exit code 0]")
        venv.envs[1] = venv.envs[1].env

        async def inside() -> Any:
            return venv.step((echo("d"), echo("e")))[0]

        assert tuple(asyncio.run(inside())["text"]) == ("d\n[exit code 0]", "e\n[exit code 0]")
        assert tuple(venv.step((echo("f"), echo("g")))[0]["text"]) == (
            "f\n[exit code 0]", "g\n[exit code 0]")
        assert used == [False, False, True, True]
    finally:
        venv.close()


@pytest.mark.sandbox
def test_an_exception_on_the_loop_is_raised_after_the_others_stepped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    venv = taskgym.make_vec(ENV_ID, num_envs=3, stepping="loop")
    used = _on_loop(venv, monkeypatch)

    def broken(*args: Any) -> Any:
        raise RuntimeError("a bug after the tool ran")

    try:
        venv.reset(seed=0)
        venv.step((echo("a"),) * 3)
        monkeypatch.setattr(venv.envs[1].unwrapped, "_tool_done", broken)
        with pytest.raises(RuntimeError, match="a bug after the tool ran"):
            venv.step((echo("a"), echo("b"), echo("c")))
        monkeypatch.undo()
        used = _on_loop(venv, monkeypatch)
        obs, reward, terminated, truncated, info = venv.step((echo("a"), echo("b"), echo("c")))
        assert tuple(obs["text"]) == ("a\n[exit code 0]", "b\n[exit code 0]", "c\n[exit code 0]")
        assert list(info["step"]) == [3, 3, 3] and used == [True]
    finally:
        venv.close()


@pytest.mark.sandbox
def test_an_interrupt_on_the_loop_leaves_no_step_running(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A KeyboardInterrupt out of one sub-env's step stops the call: the other sub-envs'
    steps are closed there (none goes on behind the caller, their shells restart before the
    next command, not waiting for what ran), and the next call steps all."""
    venv = taskgym.make_vec(ENV_ID, num_envs=3, stepping="loop")
    used = _on_loop(venv, monkeypatch)

    def interrupted(action: Any) -> Any:
        yield from ()
        raise KeyboardInterrupt

    try:
        venv.reset(seed=0)
        venv.step((echo("a"),) * 3)
        monkeypatch.setattr(venv.envs[1].unwrapped, "poll_step", interrupted)
        slow = {"tool": "bash", "args": {"command": "sleep 30; echo late"}}
        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            venv.step((slow, echo("b"), slow))
        monkeypatch.undo()
        used = _on_loop(venv, monkeypatch)
        obs = venv.step((echo("c"), echo("d"), echo("e")))[0]
        assert tuple(obs["text"]) == ("c\n[exit code 0]", "d\n[exit code 0]", "e\n[exit code 0]")
        assert used == [True]
        assert time.monotonic() - started < 15, "a step went on waiting for the sleeps"
    finally:
        venv.close()


def test_an_unknown_stepping_is_a_clear_error() -> None:
    with pytest.raises(taskgym.ConfigError, match="stepping='fibers': choose one of threads, loop"):
        TaskVectorEnv(ENV_ID, 2, stepping="fibers")
