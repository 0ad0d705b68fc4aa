"""taskgym envs for TRL's ``GRPOTrainer`` and ``AsyncGRPOTrainer`` (``environment_factory``).

TRL 1.16 builds one object per rollout from a factory, calls ``reset(**row)`` (the dataset
row), offers the policy the public functions of the object's *class* as tools, and scores a
finished rollout with ``get_reward()`` (one reward column named after the class; ``None``
makes the row unscorable: its advantage is 0 and it stays out of its group's baseline, in
both trainers). It pools the objects per env name, reuses them with ``reset`` and never
closes them; ``AsyncGRPOTrainer`` pickles the factory into a spawned child process and runs
``reset``, the tools and ``get_reward`` on a thread pool.

This module gives it:

- :func:`environment_factory` (``EnvironmentFactory``): a picklable factory for any env id;
  each call makes a :class:`TrlEnvironment` of a class generated per env id, whose public
  functions are ``reset``, ``get_reward`` and exactly the env's tools (no ``close``: a public
  ``close`` would be a tool the policy could call). A ``dict`` of them mixes domains;
- :func:`make_dataset`: rows (``task_id``, and ``environment`` for a dict) from the envs'
  task sets; with one factory no dataset is needed (each reset draws a task);
- :func:`taskgym_metrics`: a reward function that scores nothing and logs, through
  ``GRPOTrainer``'s ``log_metric``, the verifier's components and the episode ends;
- :func:`close_environments`: stops every pooled env after training (a finalizer also
  closes an env that is dropped unclosed).

The episode policy (docs/trainers.md "TRL"): an episode the env ended with a verdict gives
the verifier's score; one with no verdict (the environment failed) gives ``None``; one the
rollout ended before the env did (no submit: the model stopped calling tools, or hit
``max_completion_length`` or ``max_tool_calling_iterations``) gives ``unsubmitted``
(0.0 unless set) and its sandbox is stopped ungraded. A tool call after the end is answered
with :data:`AFTER_END` and runs nothing. ``reset`` never raises for what fails at run time:
a sandbox that cannot start gives an instruction saying so, a warning in the log and a
``None`` reward, so TRL's pool keeps its instance. Calls on one object are serialised by a
lock of its own (``GRPOTrainer`` gathers one turn's async tool calls on the same object).
"""

from __future__ import annotations

import logging
import random
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from taskgym.core.env import TaskEnv
from taskgym.core.registry import make
from taskgym.core.verdicts import no_verdict_of
from taskgym.errors import ConfigError, SandboxError
from taskgym.integrations.tool_methods import EnvTools, tool_class

__all__ = ["AFTER_END", "EnvironmentFactory", "Outcome", "TrlEnvironment", "close_environments",
           "environment_factories", "environment_factory", "make_dataset", "outcome_of",
           "taskgym_metrics"]

log = logging.getLogger(__name__)

AFTER_END = ("error: the episode is over; no tool runs any more. Reply with your final "
             "message and no tool call.")
"""What a tool call made after the episode ended answers (TRL has no env-to-trainer "done")."""
_RESET_FAILED = ("The environment could not start this episode ({reason}). There is nothing "
                 "to do: reply without calling any tool.")
_LIVE: weakref.WeakSet[TrlEnvironment] = weakref.WeakSet()
_CLASSES: dict[tuple[str, str, str], type[TrlEnvironment]] = {}
_CLASSES_LOCK = threading.Lock()


@dataclass(frozen=True)
class Outcome:
    """How one episode ended, as :meth:`TrlEnvironment.get_reward` reports it.

    ``end`` is ``"env"`` (the env ended it: a submit, or its own step or time limit),
    ``"unsubmitted"`` (the rollout ended first), ``"no_verdict"`` (the environment failed
    while running) or ``"reset_failed"``. ``reward`` is ``None`` when there is no verdict.
    """

    end: str
    reward: float | None
    verdict: str
    components: Mapping[str, float] = field(default_factory=dict)
    failure: str | None = None
    reason: str | None = None


class TrlEnvironment(EnvTools):
    """What TRL's ``environment_factory`` returns: ``reset``, ``get_reward`` and the env's
    tools (each generated class adds the tools of its env id; :func:`environment_factory`
    makes them)."""

    _unsubmitted: float | None = 0.0

    def __init__(self, env: gym.Env[Any, Any] | None = None) -> None:
        super().__init__(env)
        self._lock = threading.Lock()
        self._outcome: Outcome | None = None
        self._started = False
        weakref.finalize(self, self._env.close)  # dropped unclosed: the sandbox goes too
        _LIVE.add(self)

    def reset(self, **row: Any) -> str:
        """Start an episode and return its instruction. ``row`` is TRL's dataset row:
        ``task_id`` picks the task and ``seed`` seeds the draw; other columns are ignored.
        Without ``task_id`` the env draws a task from its task set."""
        options = {"task_id": str(row["task_id"])} if row.get("task_id") is not None else None
        seed = row.get("seed")
        with self._lock:
            self._outcome, self._started = None, False
            try:
                observation, _info = self._env.reset(seed=None if seed is None else int(seed),
                                                     options=options)
            except ConfigError as exc:
                if not isinstance(exc, SandboxError):
                    raise  # the dataset names a task the env does not have: the user's to fix
                return self._reset_failed(exc)
            except Exception as exc:  # the sandbox or the grader's preflight failed
                return self._reset_failed(exc)
            self._started = True
            return str(observation["text"])

    def get_reward(self) -> float | None:
        """The episode's reward: the verifier's score when the env ended it with a verdict,
        ``None`` with no verdict, and the factory's ``unsubmitted`` (0.0 by default) when
        the rollout ended first (its sandbox is then stopped, ungraded)."""
        with self._lock:
            if self._outcome is None:
                _task_env(self._env).end_episode()
                reward = self._unsubmitted
                self._outcome = Outcome(
                    end="unsubmitted", reward=reward, verdict="none" if reward is None else "graded",
                    reason="the rollout ended before the policy submitted" if self._started
                    else "no episode was started (reset was not called)")
            return self._outcome.reward

    def _call_tool(self, name: str, args: dict[str, Any]) -> str:
        with self._lock:
            if self._outcome is not None or not self._started:
                return AFTER_END
            observation, reward, terminated, truncated, info = self._env.step(
                {"tool": name, "args": args})
            if terminated or truncated:
                self._outcome = _ended(float(reward), info)
            return str(observation["text"])

    def _reset_failed(self, exc: BaseException) -> str:
        reason = f"{type(exc).__name__}: {exc}"
        known = no_verdict_of(exc)
        failure = str(known.failure) if known is not None else "sandbox_start"
        log.warning("taskgym %s: reset failed, the rollout gets no reward: %s",
                    type(self).__name__, reason)
        self._outcome = Outcome(end="reset_failed", reward=None, verdict="none",
                                failure=failure, reason=reason)
        return _RESET_FAILED.format(reason=reason)

    def _close(self) -> None:
        """Stop the env's sandbox (an underscore name: never a tool)."""
        with self._lock:
            self._env.close()


def outcome_of(environment: TrlEnvironment) -> Outcome | None:
    """How the object's last episode ended (``None`` while it runs)."""
    return environment._outcome


def _task_env(env: gym.Env[Any, Any]) -> TaskEnv:
    unwrapped = env.unwrapped
    assert isinstance(unwrapped, TaskEnv)  # tool_class checked it has taskgym tools
    return unwrapped


def _ended(reward: float, info: Mapping[str, Any]) -> Outcome:
    result = info.get("reward")
    components = dict(getattr(result, "components", {}) or {})
    if info.get("verdict") == "none":
        return Outcome(end="no_verdict", reward=None, verdict="none", components=components,
                       failure=str(info.get("failure")), reason=str(info.get("error", "")))
    return Outcome(end="env", reward=float(reward), verdict="graded", components=components)


class EnvironmentFactory:
    """A picklable factory: calling it makes a :class:`TrlEnvironment` of ``env_id`` (the
    env is made with ``make_kwargs``; nothing starts until ``reset``). Every call gives an
    object of the same class, named ``class_name`` (CamelCase of the id by default): TRL's
    reward column carries that name and matches rollouts by exact class."""

    def __init__(self, env_id: str, /, *, unsubmitted: float | None = 0.0,
                 class_name: str | None = None, **make_kwargs: Any) -> None:
        if make_kwargs.get("on_no_verdict", "end") != "end":
            raise ConfigError("TRL needs on_no_verdict='end': a raise inside a rollout stops "
                              "the trainer; get_reward returns None for those episodes")
        if unsubmitted is not None and not 0.0 <= float(unsubmitted) <= 1.0:
            raise ConfigError(f"unsubmitted must be None or in [0, 1], not {unsubmitted!r}")
        self.env_id = env_id
        self.unsubmitted = None if unsubmitted is None else float(unsubmitted)
        self.class_name = class_name
        self.make_kwargs = dict(make_kwargs)
        self.environment_class()  # a wrong id or tool set fails here, not in the trainer

    def environment_class(self) -> type[TrlEnvironment]:
        """The class every call makes (generated once per id, name, kwargs and policy)."""
        key = (self.env_id, self.class_name or "", repr((sorted(self.make_kwargs.items()),
                                                        self.unsubmitted)))
        with _CLASSES_LOCK:
            cls = _CLASSES.get(key)
            if cls is None:
                tools = tool_class(self.env_id, class_name=self.class_name, **self.make_kwargs)
                cls = type(tools.__name__, (TrlEnvironment, tools),
                           {"__module__": __name__, "__qualname__": tools.__name__,
                            "__doc__": tools.__doc__, "_unsubmitted": self.unsubmitted})
                _CLASSES[key] = cls
        return cls

    def __call__(self) -> TrlEnvironment:
        return self.environment_class()()

    def __repr__(self) -> str:
        extra = "".join(f", {k}={v!r}" for k, v in self.make_kwargs.items())
        return f"environment_factory({self.env_id!r}, unsubmitted={self.unsubmitted!r}{extra})"


def environment_factory(env_id: str, /, *, unsubmitted: float | None = 0.0,
                        class_name: str | None = None, **make_kwargs: Any) -> EnvironmentFactory:
    """TRL's ``environment_factory`` for ``env_id`` (see :class:`EnvironmentFactory`)."""
    return EnvironmentFactory(env_id, unsubmitted=unsubmitted, class_name=class_name,
                              **make_kwargs)


def environment_factories(env_ids: Mapping[str, str] | Iterable[str], /, *,
                          unsubmitted: float | None = 0.0,
                          **make_kwargs: Any) -> dict[str, EnvironmentFactory]:
    """The dict form that mixes envs: ``{name: factory}``, from ``{name: env_id}`` or from
    ids (each named by itself). ``make_kwargs`` go to every env."""
    pairs = env_ids.items() if isinstance(env_ids, Mapping) else ((i, i) for i in env_ids)
    return {name: EnvironmentFactory(env_id, unsubmitted=unsubmitted, **make_kwargs)
            for name, env_id in pairs}


def make_dataset(factories: EnvironmentFactory | Mapping[str, EnvironmentFactory], /, *,
                 task_ids: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
                 repeat: int = 1, prompt: str = "", seed: int | None = 0) -> Any:
    """A ``datasets.Dataset`` of one row per task (``repeat`` times), shuffled with ``seed``
    (``None``: in task order). Each row has ``prompt`` (one user message, ``prompt``, to
    which TRL appends the instruction ``reset`` returns), ``task_id`` and, for a dict of
    factories, ``environment`` (the name TRL routes by). The tasks are ``task_ids`` (one list,
    or one per name) or else each env's whole task set (a generated set's first ``size``
    seeds)."""
    from datasets import Dataset  # type: ignore[import-not-found]  # the trl extra's

    named = factories.items() if isinstance(factories, Mapping) else [(None, factories)]
    if repeat < 1:
        raise ConfigError(f"repeat must be at least 1, not {repeat}")
    rows = []
    for name, factory in named:
        if isinstance(task_ids, Mapping):
            if name is None:
                raise ConfigError("task_ids by name are for a dict of factories; give one "
                                  "factory a list of task ids")
            ids = list(task_ids[name]) if name in task_ids else _task_ids(factory)
        else:
            ids = list(task_ids) if task_ids is not None else _task_ids(factory)
        for task_id in ids * repeat:
            row: dict[str, Any] = {"prompt": [{"role": "user", "content": prompt}],
                                   "task_id": task_id}
            if name is not None:
                row["environment"] = name
            rows.append(row)
    if seed is not None:
        random.Random(seed).shuffle(rows)
    return Dataset.from_list(rows)


def _task_ids(factory: EnvironmentFactory) -> list[str]:
    env = make(factory.env_id, **factory.make_kwargs)  # starts nothing
    try:
        return list(_task_env(env).task_set.ids())
    finally:
        env.close()


def taskgym_metrics(prompts: Sequence[Any], environments: Sequence[Any] | None = None,
                    log_metric: Any = None, log_extra: Any = None,
                    **_columns: Any) -> list[None]:
    """A reward function for ``GRPOTrainer(reward_funcs=[taskgym_metrics], ...)`` that scores
    nothing (``None`` for every row, which TRL leaves out of the sum) and logs, per batch,
    the mean of each verifier component (``taskgym/<component>``) and the share of
    episodes by end (``taskgym/end_<end>``), and adds a ``taskgym_end`` column to the
    completions table. ``AsyncGRPOTrainer`` passes reward functions neither the envs nor
    ``log_metric``; there it logs nothing."""
    outcomes = [outcome_of(e) if isinstance(e, TrlEnvironment) else None
                for e in environments or ()]
    known = [o for o in outcomes if o is not None]
    if log_metric is not None and known:
        sums: dict[str, list[float]] = {}
        for outcome in known:
            for name, value in outcome.components.items():
                sums.setdefault(name, []).append(float(value))
        for name, values in sorted(sums.items()):
            log_metric(f"taskgym/{name}", sum(values) / len(values))
        for end in ("env", "unsubmitted", "no_verdict", "reset_failed"):
            log_metric(f"taskgym/end_{end}", sum(o.end == end for o in known) / len(known))
    if log_extra is not None and environments is not None:
        log_extra("taskgym_end", [o.end if o is not None else "" for o in outcomes])
    return [None] * len(prompts)


def close_environments(trainer: Any = None) -> int:
    """Stop the sandboxes of the envs a trainer pooled (``GRPOTrainer`` keeps them and never
    closes them), or with no trainer of every env the factories made in this process.
    Returns how many were closed. The objects stay usable: a later ``reset`` starts anew."""
    if trainer is None:
        found: list[Any] = list(_LIVE)
    else:
        pools = getattr(trainer, "_environment_pool", None) or {}
        found = [e for pool in pools.values() for e in pool]
        found += list(getattr(trainer, "environments", None) or ())
    closed = 0
    for environment in dict.fromkeys(found):  # each once, in order
        if isinstance(environment, TrlEnvironment):
            environment._close()
            closed += 1
    return closed
