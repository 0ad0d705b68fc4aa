"""``check_task_env``: does an env keep every promise of a taskgym env?

For env authors (a plugin's own env, a new domain) and for the test suite, which runs it over
every registered id::

    report = taskgym.check_task_env("cad-cadquery-v0")   # {check name: "ok" | what failed}

``taskgym env check ENV_ID`` prints the same. Each check catches its own failure, so one
broken promise does not hide the others.

Among them, the verifier's contract: the oracle scores 1 and the null agent 0, both graded
(a score of 0 with no verdict is the environment's failure, not the null agent's); malformed
submissions (the workspace's files overwritten with random bytes, an empty workspace, the
submit tool's arguments sampled from its schema) end in a graded score in [0, 1], never an
exception or a crash; and the oracle's final state, graded ``grades`` times (a snapshot
restored before each submit), gives one verdict and one reward.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import jsonschema
from gymnasium.utils.env_checker import check_env

from taskgym.agents import NullAgent, OracleAgent
from taskgym.core.env import TaskEnv
from taskgym.core.registry import make
from taskgym.core.reward import RewardResult
from taskgym.core.spaces import ToolCallSpace
from taskgym.core.task import GeneratedTaskSet, TaskSet
from taskgym.evaluation import EpisodeRecord, run_episode
from taskgym.fuzz import fuzz_env
from taskgym.sandbox.host.cleanup import runtime_root
from taskgym.sandbox.host.procs import running_argv

__all__ = ["check_task_env", "host_state", "oracle_then_null", "sleepers"]

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""What OpenAI accepts as a function name."""
INVALID = {"tool": "no-such-tool", "args": {}}
"""An action every env refuses at once (a cheap step that still counts)."""


class CheckFailed(Exception):
    """One check's failure, with the message the report shows."""


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def oracle_then_null(env: gym.Env[Any, Any], **where: Any
                     ) -> tuple[EpisodeRecord, EpisodeRecord, list[str]]:
    """Play one task (``task_id=`` or ``seed=``) with the oracle, then with the null agent.

    Returns both records and what went wrong: the oracle must succeed with score 1, the
    null agent (which submits at once) must fail with score 0.
    """
    oracle = run_episode(env, OracleAgent(env), **where)
    null = run_episode(env, NullAgent(), **where)
    problems = []
    for record, want in ((oracle, (1.0, True)), (null, (0.0, False))):
        if (record.score, record.success) != want or not record.graded:
            verdict = "" if record.graded else f", no verdict ({record.failure})"
            problems.append(f"{record.agent} on {record.task_id}: score {record.score}, success "
                            f"{record.success}{verdict} (want {want[0]}, {want[1]}, graded): "
                            f"{record.error or record.reason or record.components}")
    return oracle, null, problems


# -- the checks ------------------------------------------------------------------------------

def _gymnasium(env: TaskEnv, make_env: Callable[..., TaskEnv]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            check_env(env)
        except AssertionError as exc:
            raise CheckFailed(f"gymnasium's check_env: {exc}") from None
    _expect(not caught, "; ".join(str(w.message) for w in caught))


def _tool_schemas(env: TaskEnv, make_env: Callable[..., TaskEnv]) -> None:
    for tool in env.tools:
        _expect(bool(OPENAI_NAME.match(tool.name)),
                f"tool name {tool.name!r} is not a valid OpenAI function name (letters, digits, _ "
                "and -, at most 64)")
        schema = tool.json_schema()
        validator = jsonschema.validators.validator_for(schema)
        try:
            validator.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise CheckFailed(f"{tool.name}: not a valid JSON Schema: {exc.message}") from None
        _expect(schema.get("type") == "object", f"{tool.name}: its parameters are not an object")
        spec = tool.openai()
        _expect(json.loads(json.dumps(spec)) == spec, f"{tool.name}: the OpenAI tool does not "
                "survive JSON")
        function = spec["function"]
        _expect((function["name"], function["parameters"]) == (tool.name, schema),
                f"{tool.name}: the OpenAI tool differs from the tool")
        space = ToolCallSpace([tool], seed=0)
        for _ in range(5):  # arguments the model accepts are valid under the schema
            args = space.sample()["args"]
            try:
                tool.args.model_validate(args)
            except ValueError as exc:
                raise CheckFailed(f"{tool.name}: the action space sampled {args}, which the "
                                  f"tool's model refuses: {exc}") from None
            try:
                validator(schema).validate(json.loads(json.dumps(args)))
            except jsonschema.ValidationError as exc:
                raise CheckFailed(f"{tool.name}: {args} passes the pydantic model but not "
                                  f"the schema: {exc.message}") from None


def _oracle_and_null(task_set: TaskSet, count: int) -> Callable[[TaskEnv, Callable[..., TaskEnv]],
                                                                None]:
    def check(env: TaskEnv, make_env: Callable[..., TaskEnv]) -> None:
        seeds = range(count)
        if isinstance(task_set, GeneratedTaskSet):  # seed s goes to generator s % k
            seeds = range(count * len(task_set.generator_names))
        saved, env.task_set = env.task_set, task_set
        problems = []
        try:
            for seed in seeds:
                problems += oracle_then_null(env, task_id=task_set.pick(seed).id)[2]
        finally:
            env.task_set = saved
        _expect(not problems, "; ".join(problems))
    return check


def _fuzz(env: TaskEnv, make_env: Callable[..., TaskEnv]) -> None:
    report = fuzz_env(env, 500, seed=0, execute=0.01)
    _expect(not report.problems, f"{len(report.problems)} broken promises, the first: "
            f"{report.problems[0] if report.problems else ''}")
    env.reset(seed=0)
    first = env.oracle_actions(env.task)[0]  # type: ignore[arg-type]
    info = env.step(first)[4]
    _expect("error" not in info, f"after the fuzzing, the oracle's first action failed: "
            f"{info.get('error')}")


def _step_limit_then_step_after_the_end(env: TaskEnv, make_env: Callable[..., TaskEnv]) -> None:
    short = make_env(max_steps=2)
    try:
        short.reset(seed=0)
        first = short.step(INVALID)
        _expect(not (first[2] or first[3]), "the episode ended after 1 of 2 steps")
        obs, reward, terminated, truncated, info = short.step(INVALID)
        _expect(truncated and not terminated and "step limit" in obs["text"] and "reward" in info,
                f"step 2 of 2 did not truncate and grade: {obs['text'][-200:]!r}")
        obs, reward, terminated, truncated, info = short.step(INVALID)
        _expect(terminated and reward == 0.0 and "reset()" in info.get("error", ""),
                f"a step after the end gave {obs['text'][:200]!r}, terminated={terminated}")
    finally:
        short.close()


def _time_limit(env: TaskEnv, make_env: Callable[..., TaskEnv]) -> None:
    short = make_env(timeout_sec=1.0)
    try:
        short.reset(seed=0)
        time.sleep(1.1)
        obs, reward, terminated, truncated, info = short.step(INVALID)
        _expect(truncated and not terminated and "time limit" in obs["text"] and "reward" in info,
                f"a step past the time budget did not truncate and grade: {obs['text'][-200:]!r}")
    finally:
        short.close()


def _seeded_reset(env: TaskEnv, make_env: Callable[..., TaskEnv]) -> None:
    for seed in (0, 1, 12345):
        first = env.reset(seed=seed)
        again = env.reset(seed=seed)
        _expect(first[1]["task_id"] == again[1]["task_id"] and first[0] == again[0],
                f"reset(seed={seed}) picked {first[1]['task_id']} then {again[1]['task_id']}")


def _close_twice_leaves_nothing(env: TaskEnv, make_env: Callable[..., TaskEnv]) -> None:
    before = host_state()
    other = make_env()
    other.reset(seed=0)
    marker = f"{secrets.randbelow(10**6) + 10**6}.{secrets.randbelow(10**6)}"
    other.session.exec(f"(setsid sleep {marker} >/dev/null 2>&1 &) ; nohup sleep {marker} "
                       ">/dev/null 2>&1 &", timeout=10)
    deadline = time.monotonic() + 10  # a loaded machine may start them after exec returns
    while time.monotonic() < deadline and len(sleepers(marker)) < 2:
        time.sleep(0.05)
    _expect(len(sleepers(marker)) == 2, "could not see the processes planted in the sandbox")
    other.close()
    other.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and (sleepers(marker) or host_state() - before):
        time.sleep(0.1)
    _expect(not sleepers(marker), "a process started in the sandbox outlived close()")
    left = host_state() - before
    _expect(not left, f"left after close(): {', '.join(sorted(left)[:10])}")


# -- the verifier's contract ----------------------------------------------------------------

SCRAMBLE = ("find . -type f -not -path './.git/*' 2>/dev/null | head -n 200 | "
            "while IFS= read -r f; do head -c 777 /dev/urandom > \"$f\"; done")
"""Overwrite (at most 200 of) the workspace's files with random bytes."""
EMPTY = "find . -mindepth 1 -maxdepth 1 -exec rm -rf {} + 2>/dev/null; true"
"""Remove everything from the workspace."""


def _final_grade(env: TaskEnv, action: Any, what: str, graded: bool = True) -> RewardResult:
    """Step ``action`` (again, through the steps of a multi-step task, at most 20 times):
    the episode must end with a result in [0, 1], graded unless ``graded`` is False."""
    for _ in range(20):
        try:
            obs, reward, terminated, truncated, info = env.step(action)
        except Exception as exc:
            raise CheckFailed(f"{what}: step raised {type(exc).__name__}: {exc}") from None
        if terminated or truncated or "crash" in info:
            break
    _expect("crash" not in info, f"{what}: the env crashed: {info.get('error')}")
    result = info.get("reward")
    _expect(terminated or truncated, f"{what}: the episode did not end: {obs['text'][:200]!r}")
    _expect(isinstance(result, RewardResult), f"{what}: the end of the episode has no "
            "RewardResult in info['reward']")
    assert isinstance(result, RewardResult)
    _expect(result.graded or not graded, f"{what}: no verdict ({result.failure}): "
            f"{result.details.get('reason')}")
    _expect(0.0 <= reward == result.score <= 1.0, f"{what}: reward {reward} is not the "
            f"result's score {result.score} in [0, 1]")
    return result


def _malformed_submissions(env: TaskEnv, make_env: Callable[..., TaskEnv]) -> None:
    submit = env.oracle_actions(env.task_set.pick(0))[-1]  # its submit, with the arguments
    for what, command in (("random bytes in the workspace's files", SCRAMBLE),
                          ("an empty workspace", EMPTY)):
        env.reset(seed=0)
        env.session.exec(command, timeout=60)
        _final_grade(env, submit, f"submitting {what}")
    name = submit.get("tool") if isinstance(submit, dict) else None
    tool = next((t for t in env.tools if t.name == name), None)
    if tool is not None:
        space = ToolCallSpace([tool], seed=0)
        for i in range(3):  # arguments well-formed for the schema, meaningless for the task
            env.reset(seed=0)
            _final_grade(env, space.sample(), f"submit with sampled arguments (#{i + 1})")


def _same_state_same_verdict(grades: int) -> Callable[[TaskEnv, Callable[..., TaskEnv]], None]:
    def check(env: TaskEnv, make_env: Callable[..., TaskEnv]) -> None:
        env.reset(seed=0)
        assert env.task is not None
        actions = env.oracle_actions(env.task)
        for action in actions[:-1]:
            env.step(action)
        _expect(not env.is_over, "the oracle's episode ended before its last action")
        snap = env.snapshot()
        seen: dict[tuple[str, float, bool], int] = {}
        try:
            for _ in range(grades):
                env.restore(snap)
                result = _final_grade(env, actions[-1], "the oracle's final state", graded=False)
                key = (result.verdict, result.score, result.success)
                seen[key] = seen.get(key, 0) + 1
        finally:
            snap.close()
        _expect(len(seen) == 1, f"the same final state graded {grades} times gave "
                + ", ".join(f"{n} x (verdict {v}, score {s}, success {ok})"
                            for (v, s, ok), n in seen.items()))
    return check


CHECKS: dict[str, Callable[[TaskEnv, Callable[..., TaskEnv]], None]] = {
    "gymnasium_check_env": _gymnasium,
    "tool_schemas": _tool_schemas,
    "fuzz_500_garbage_actions": _fuzz,
    "truncation_by_step_limit_then_step_after_the_end": _step_limit_then_step_after_the_end,
    "truncation_by_time_limit": _time_limit,
    "reset_seed_picks_the_same_task": _seeded_reset,
    "close_twice_leaves_nothing": _close_twice_leaves_nothing,
    "verifier_malformed_submissions_are_graded": _malformed_submissions,
}


# -- what the host holds ---------------------------------------------------------------------

def sleepers(marker: str) -> set[int]:
    """Host processes running ``sleep <marker>`` (sandbox processes are visible there)."""
    return running_argv(f"sleep\x00{marker}\x00".encode())


def host_state(pid: int | None = None) -> set[str]:
    """The child processes of process ``pid`` (default: this one), and the cgroups, temporary
    folders and mounts named after it (taskgym names what it makes outside a sandbox
    ``<pid>-...``)."""
    me = str(pid or os.getpid())
    state = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            if stat[stat.rindex(")") + 2:].split()[1] == me:
                state.add(f"process {entry.name} {stat[stat.index('('):stat.rindex(')') + 1]}")
    state |= {f"mount {point}" for point in (line.split()[4] for line in
              Path("/proc/self/mountinfo").read_text().splitlines()) if f"/{me}-" in point}
    roots = [Path("/sys/fs/cgroup"), runtime_root()]
    for root in roots:
        for folder, dirs, _files in os.walk(root):
            state |= {f"folder {folder}/{d}" for d in dirs if d.startswith(f"{me}-")}
            if folder.count("/") - str(root).count("/") >= 3:
                dirs.clear()
    return state


# -- the entry point -------------------------------------------------------------------------

def check_task_env(env: str | gym.Env[Any, Any], *, tasks_per_set: int = 2, grades: int = 20,
                   **env_kwargs: Any) -> dict[str, str]:
    """Run every check on ``env`` (an id, made with ``env_kwargs``, or an env); return
    ``{check name: "ok" | what failed}``.

    The oracle scores 1 with success and the null agent scores 0 on the first
    ``tasks_per_set`` tasks of the env's task set (the curated set unless ``tasks=`` says
    otherwise) and on ``tasks_per_set`` tasks of each generator, graded both; the oracle's
    final state of the first task is graded ``grades`` times (20, as the verifier contract
    asks; fewer only where a test must be fast) and must give one verdict and one reward. The env
    given is reset and stepped, and closed at the end only when made here; limit and
    clean-up checks use envs of the same class and tasks made for them.
    """
    made = isinstance(env, str)
    instance = make(env, **env_kwargs) if isinstance(env, str) else env
    base = instance.unwrapped
    if not isinstance(base, TaskEnv):
        return {"is_a_task_env": f"{type(base).__name__} is not a taskgym TaskEnv"}

    def make_env(**overrides: Any) -> TaskEnv:
        return type(base)(tasks=base.task_set, sandbox=base.backend, **overrides)

    checks = dict(CHECKS)
    checks[f"verifier_same_state_same_verdict_{grades}_grades"] = _same_state_same_verdict(grades)
    checks["oracle_1_null_0"] = _oracle_and_null(base.task_set, tasks_per_set)
    generated = base.named_tasks("generated")
    if generated is not None and not isinstance(base.task_set, GeneratedTaskSet):
        checks["oracle_1_null_0_generated"] = _oracle_and_null(generated, tasks_per_set)
    report = {}
    try:
        for name, check in checks.items():
            try:
                check(base, make_env)
                report[name] = "ok"
            except CheckFailed as exc:
                report[name] = str(exc)
            except Exception as exc:  # a check that cannot even run says why
                report[name] = (f"raised {type(exc).__name__}: {exc}\n"
                                + "".join(traceback.format_exception(exc))[-2000:])
    finally:
        if made:
            instance.close()
    return report
