"""taskgym's own vector env: ``n`` envs in this process, stepped concurrently.

``gymnasium.make_vec("taskgym/<id>", num_envs=n)`` (its ``vector_entry_point`` mode, the
default for every taskgym id) and :func:`taskgym.make_vec` make one. A sandbox step is
mostly waiting on the sandbox, so one process steps them all, without pickling observations
across pipes, two ways (``stepping``):

- ``"loop"`` (the default when the sub-envs' sandboxes are local or docker ones, whose
  shells are waited on with no thread: :data:`LOOP_BACKENDS`): the calling thread steps
  every sub-env at once, each step a plan (:meth:`~taskgym.core.env.TaskEnv.poll_step`) and
  all of them driven by one ``poll`` loop (:func:`~taskgym.sandbox.shell.plans.drive_plans`): the
  sandboxes' answers are waited for together, with no event-loop machinery and no thread
  handing work to another; only what blocks (grading, a tool with no plan) goes to the
  bounded pool. What the loop cannot take still goes through the threads: resets (they
  block), and a sub-env whose ``step`` is its own (a wrapper of the user's, a domain's
  override) or whose wrappers still have a check to make (Gymnasium's first-step check). It
  costs the least host CPU per sub-step (docs/benchmarks.md, vector envs).
- ``"threads"`` (the default for other sandboxes, whose commands may only block): each
  sub-env is always stepped by the same thread (the calling thread steps the first share
  itself), so no env is ever used from two threads at once; the wait on a sandbox lets the
  GIL go.

It follows Gymnasium's :class:`~gymnasium.vector.VectorEnv` conventions: autoreset modes
(``NEXT_STEP`` by default, in ``metadata["autoreset_mode"]``), infos as a dict of arrays with
``_key`` masks, ``reset(seed=int | list)`` and ``options["reset_mask"]``; observations are
``{"text": tuple of n strings}``, as ``SyncVectorEnv`` gives.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from taskgym.core.vector_stepping import LoopStepper, Step, Threads
from taskgym.errors import ConfigError

__all__ = ["TaskVectorEnv"]

STEPPING = ("threads", "loop")
LOOP_BACKENDS = frozenset({"local", "docker"})
"""Backends whose sessions' plans wait on descriptors (``Session.exec_plan``): the loop is
their default stepping (docs/benchmarks.md, vector envs)."""
"""How a vector env steps its sub-envs (see the module's docstring)."""


class TaskVectorEnv(gym.vector.VectorEnv[dict[str, Any], tuple[Any, ...], np.ndarray]):
    """``num_envs`` taskgym envs of ``env_id``, stepped concurrently in this process.

    Args:
        env_id: a registered id (``"coding-terminal-v0"`` or ``"taskgym/coding-terminal-v0"``).
        num_envs: how many sub-envs.
        autoreset_mode: Gymnasium's autoreset mode (``NEXT_STEP``, ``SAME_STEP``, ``DISABLED``
            or their names); ``NEXT_STEP``: a sub-env that ended resets on the next ``step``,
            which ignores its action.
        max_workers: threads stepping the sub-envs (the calling thread included), what the
            loop does not take with ``stepping="loop"``; ``None``: one per sub-env. With
            fewer, each steps its sub-envs one after another.
        stepping: ``"threads"`` or ``"loop"`` (see the module's docstring); ``None``: the
            loop when the sub-envs' sandboxes are local or docker ones (whose shells the
            loop drives with no thread), else the threads. :attr:`stepping` says which.
        **env_kwargs: keyword arguments of every sub-env (``tasks``, ``sandbox``,
            ``max_steps``...), as :func:`taskgym.make` takes them.
    """

    def __init__(self, env_id: str, num_envs: int, *,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                 max_workers: int | None = None, stepping: str | None = None,
                 **env_kwargs: Any) -> None:
        from taskgym.core.registry import make  # the registry names this class: import late

        if num_envs < 1:
            raise ConfigError(f"num_envs={num_envs}: a vector env needs at least one sub-env; "
                              "give num_envs=1 or more")
        if max_workers is not None and max_workers < 1:
            raise ConfigError(f"max_workers={max_workers}: give at least 1 (or None: one per "
                              "sub-env)")
        if stepping is not None and stepping not in STEPPING:
            raise ConfigError(f"stepping={stepping!r}: choose one of {', '.join(STEPPING)}")
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.num_envs = num_envs
        self.envs: list[gym.Env[Any, Any]] = []
        try:
            for _ in range(num_envs):
                self.envs.append(make(env_id, **env_kwargs))
        except BaseException:
            for env in self.envs:
                env.close()
            raise
        first = self.envs[0]
        if stepping is None:
            backend = getattr(first.unwrapped, "backend", None)
            stepping = "loop" if getattr(backend, "name", None) in LOOP_BACKENDS else "threads"
        self.stepping = stepping
        """How the sub-envs are stepped: ``"loop"`` or ``"threads"``."""
        self.metadata = {**first.metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = first.render_mode
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._threads = Threads(min(max_workers or num_envs, num_envs))
        self._loop = LoopStepper() if stepping == "loop" else None
        self._observations: list[Any] = [None] * num_envs
        self._autoreset = np.zeros(num_envs, dtype=np.bool_)
        self._all = list(range(num_envs))

    # -- Gymnasium's VectorEnv API --------------------------------------------------------
    def reset(self, *, seed: int | Sequence[int | None] | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset every sub-env (or those of ``options["reset_mask"]``, a bool array).

        ``seed``: ``None`` (each sub-env picks), an int (``seed + i`` for sub-env ``i``, so
        ``seed=s`` gives sub-env ``i`` the task a single env reset with ``s + i`` gets) or a
        list of one seed (or ``None``) per sub-env. Other ``options`` reach every sub-env.
        """
        seeds = self._seeds(seed)
        options = dict(options or {})
        mask = self._reset_mask(options.pop("reset_mask", None))
        calls = [self._reset_call(i, seeds[i], options) if mask[i] else None
                 for i in range(self.num_envs)]
        infos: list[tuple[int, dict[str, Any]]] = []
        for i, result in enumerate(self._threads.run(calls)):
            if result is None:  # not in the mask
                continue
            obs, info = result
            self._observations[i] = obs
            self._autoreset[i] = False
            infos.append((i, info))
        return self._batch(), self._batch_infos(infos)

    def step(self, actions: Any) -> tuple[dict[str, Any], np.ndarray, np.ndarray, np.ndarray,
                                          dict[str, Any]]:
        """One action per sub-env (a tuple or list of ``num_envs`` actions), stepped at once."""
        batch = list(iterate(self.action_space, actions))
        if len(batch) != self.num_envs:
            raise ConfigError(f"{len(batch)} actions for {self.num_envs} sub-envs: give one "
                              "action per sub-env")
        stepped = self._step_on_loop(batch)
        if stepped is None:
            calls = [self._step_call(i, action) for i, action in enumerate(batch)]
            stepped = self._threads.run(calls)
        self._observations = [obs for obs, *_ in stepped]
        rewards = np.array([float(step[1]) for step in stepped], dtype=np.float64)
        terminated = np.array([step[2] for step in stepped], dtype=np.bool_)
        truncated = np.array([step[3] for step in stepped], dtype=np.bool_)
        infos = [(i, step[4]) for i, step in enumerate(stepped)]
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            self._autoreset = terminated | truncated
        return self._batch(), rewards, terminated, truncated, self._batch_infos(infos)

    def render(self) -> tuple[Any, ...]:
        return tuple(env.render() for env in self.envs)

    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``name(*args, **kwargs)`` on every sub-env (or the attribute, if not callable)."""
        found = [env.get_wrapper_attr(name) for env in self.envs]
        return tuple(f(*args, **kwargs) if callable(f) else f for f in found)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        return tuple(env.get_wrapper_attr(name) for env in self.envs)

    def close_extras(self, **kwargs: Any) -> None:
        """Close every sub-env (their sandboxes go), then stop the threads."""
        try:
            self._threads.run([env.close for env in self.envs])
        finally:
            self._threads.stop()

    # -- the pieces ---------------------------------------------------------------------
    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int | np.integer):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ConfigError(f"{len(seeds)} seeds for {self.num_envs} sub-envs: give one per "
                              "sub-env, an int, or None")
        return seeds

    def _reset_mask(self, mask: Any) -> np.ndarray:
        if mask is None:
            return np.ones(self.num_envs, dtype=np.bool_)
        if not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_
                and mask.shape == (self.num_envs,) and mask.any()):
            raise ConfigError(f"options['reset_mask'] must be a numpy bool array of shape "
                              f"({self.num_envs},) with at least one True")
        return mask

    def _reset_call(self, i: int, seed: int | None, options: dict[str, Any]
                    ) -> Callable[[], tuple[Any, dict[str, Any]]]:
        env = self.envs[i]
        return lambda: env.reset(seed=seed, options=options or None)

    def _step_on_loop(self, batch: list[Any]) -> list[Step] | None:
        """The batch stepped on the loop (``SAME_STEP``'s resets after it, from the threads),
        or ``None`` when the env steps from threads, a sub-env cannot be stepped on the loop
        (:meth:`LoopStepper.steppable`) or one resets now (``NEXT_STEP``)."""
        if self._loop is None or (self.autoreset_mode == AutoresetMode.NEXT_STEP
                                  and self._autoreset.any()):
            return None
        envs = self._loop.task_envs(self.envs)
        if envs is None:
            return None
        stepped = self._loop.step(envs, batch)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            ended = [i for i, (_o, _r, term, trunc, _info) in enumerate(stepped) if term or trunc]
            calls: list[Callable[[], tuple[Any, dict[str, Any]]] | None] = [None] * self.num_envs
            for i in ended:
                calls[i] = self.envs[i].reset
            for i, reset in enumerate(self._threads.run(calls)):
                if reset is not None:
                    obs, reward, term, trunc, info = stepped[i]
                    stepped[i] = (reset[0], reward, term, trunc,
                                  {"final_obs": obs, "final_info": info, **reset[1]})
        return stepped

    def _step_call(self, i: int, action: Any) -> Callable[[], Step]:
        env = self.envs[i]
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and self._autoreset[i]:
            def autoreset() -> Step:
                obs, info = env.reset()
                return obs, 0.0, False, False, info
            return autoreset
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            def step_then_reset() -> Step:
                obs, reward, term, trunc, info = env.step(action)
                if term or trunc:
                    final = {"final_obs": obs, "final_info": info}
                    obs, info = env.reset()
                    info = {**final, **info}
                return obs, reward, term, trunc, info
            return step_then_reset
        return lambda: env.step(action)

    def _batch_infos(self, infos: Sequence[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
        """Gymnasium's batched infos (a dict of arrays, each key ``k`` with a bool mask ``_k``;
        dicts batched key by key; ``final_obs`` an object array), what
        ``VectorEnv._add_info`` builds one sub-env at a time, built one key at a time (a
        fifth of the time with 16 sub-envs; when every info has the same keys, the usual
        case, each key's values are gathered in one pass). Values of one key of different
        types make an object array."""
        columns: dict[str, tuple[list[int], list[Any]]] = {}
        keys = infos[0][1].keys() if infos else None
        if keys is not None and all(info.keys() == keys for _, info in infos):
            indices = [i for i, _ in infos]
            for key in keys:
                columns[key] = (indices, [info[key] for _, info in infos])
        else:
            for i, info in infos:
                for key, value in info.items():
                    column = columns.get(key)
                    if column is None:
                        columns[key] = column = ([], [])
                    column[0].append(i)
                    column[1].append(value)
        batched: dict[str, Any] = {}
        for key, (indices, values) in columns.items():
            kind = type(values[0])
            plain = key != "final_obs" and all(type(value) is kind for value in values)
            every = indices == self._all
            where: Any = slice(None) if every else indices  # no fancy indexing
            array: Any
            if plain and issubclass(kind, dict):
                array = self._batch_infos(list(zip(indices, values, strict=True)))
            elif plain and (kind in (int, float, bool) or issubclass(kind, np.number)):
                if every:
                    array = np.array(values, dtype=kind)
                else:
                    array = np.zeros(self.num_envs, dtype=kind)
                    array[where] = values
            elif plain and every and kind is str:
                array = np.array(values, dtype=object)
            elif plain and issubclass(kind, np.ndarray):
                array = np.zeros((self.num_envs, *values[0].shape), dtype=values[0].dtype)
                array[where] = values
            else:
                array = np.full(self.num_envs, None, dtype=object)
                for i, value in zip(indices, values, strict=True):
                    array[i] = value
            if every:
                mask = np.ones(self.num_envs, dtype=np.bool_)
            else:
                mask = np.zeros(self.num_envs, dtype=np.bool_)
                mask[indices] = True
            batched[key], batched[f"_{key}"] = array, mask
        return batched

    def _batch(self) -> dict[str, Any]:
        """The sub-envs' observations batched as ``SyncVectorEnv`` batches them."""
        empty = create_empty_array(self.single_observation_space, n=self.num_envs)
        return cast(dict[str, Any], concatenate(self.single_observation_space,
                                                self._observations, cast(Any, empty)))
