"""taskgym's own vector env: ``n`` envs in this process, stepped concurrently.

``gymnasium.make_vec("taskgym/<id>", num_envs=n)`` (its ``vector_entry_point`` mode, the
default for every taskgym id) and :func:`taskgym.make_vec` make one. A sandbox step is
mostly waiting on the sandbox, so one process steps them all, without pickling observations
across pipes, two ways (``stepping``):

- ``"threads"`` (the default): each sub-env is always stepped by the same thread (the
  calling thread steps the first share itself), so no env is ever used from two threads at
  once; the wait on a sandbox lets the GIL go.
- ``"loop"``: the calling thread steps every sub-env at once with ``astep`` on a private
  event loop (uvloop's when it is installed: ``taskgym[fast]``), so the sandboxes' answers
  are waited for together and no thread hands work to another. What the loop cannot take
  still goes through the threads: resets (they block), a sub-env whose ``step`` is its own (a
  wrapper of the user's, a domain's override) or whose wrappers still have a check to make
  (Gymnasium's first-step check), and a call made from inside a running event loop. It makes
  no thread hand-over, but measured on a busy machine it was no faster: its one thread gets
  less of a CPU than the threads do (docs/benchmarks.md, vector envs), hence not the default.

It follows Gymnasium's :class:`~gymnasium.vector.VectorEnv` conventions: autoreset modes
(``NEXT_STEP`` by default, in ``metadata["autoreset_mode"]``), infos as a dict of arrays with
``_key`` masks, ``reset(seed=int | list)`` and ``options["reset_mask"]``; observations are
``{"text": tuple of n strings}``, as ``SyncVectorEnv`` gives.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Callable, Sequence
from typing import Any, SupportsFloat, TypeVar, cast

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate
from gymnasium.wrappers import OrderEnforcing, PassiveEnvChecker

from taskgym.core.env import TaskEnv

__all__ = ["TaskVectorEnv"]

T = TypeVar("T")
STEPPING = ("threads", "loop")
"""How a vector env steps its sub-envs (see the module's docstring)."""
Step = tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]


class _Threads:
    """``workers - 1`` threads and the caller, each running a fixed share of a batch of calls
    (call ``i`` always runs in share ``i % workers``; a ``None`` call is skipped)."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._pending = 0
        self._queues: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue()
                                                      for _ in range(workers - 1)]
        self._threads = [threading.Thread(target=self._serve, args=(q,), daemon=True,
                                          name=f"taskgym-vector-{k + 1}")
                         for k, q in enumerate(self._queues)]
        for thread in self._threads:
            thread.start()

    def run(self, calls: Sequence[Callable[[], T] | None]) -> list[T]:
        """Every call's result, in order (``None`` for a skipped call); the first exception is
        raised once all have run."""
        results: list[Any] = [None] * len(calls)
        errors: list[BaseException | None] = [None] * len(calls)
        shares = [range(k, len(calls), self.workers) for k in range(self.workers)]
        busy = [k for k in range(1, self.workers) if shares[k]]
        self._pending = len(busy)
        self._done.clear()
        for k in busy:
            self._queues[k - 1].put((calls, shares[k], results, errors))
        self._run_share(calls, shares[0], results, errors)
        if busy:
            self._done.wait()
        for error in errors:
            if error is not None:
                raise error
        return results

    @staticmethod
    def _run_share(calls: Sequence[Callable[[], Any] | None], share: range, results: list[Any],
                   errors: list[BaseException | None]) -> None:
        for i in share:
            call = calls[i]
            if call is None:
                continue
            try:
                results[i] = call()
            except BaseException as exc:  # handed to the caller, raised there
                errors[i] = exc

    def _serve(self, jobs: queue.SimpleQueue[Any]) -> None:
        while True:
            job = jobs.get()
            if job is None:
                return
            self._run_share(*job)
            with self._lock:
                self._pending -= 1
                last = self._pending == 0
            if last:
                self._done.set()

    def stop(self) -> None:
        for jobs in self._queues:
            jobs.put(None)
        for thread in self._threads:
            thread.join()


class _Loop:
    """A private event loop stepping sub-envs with ``astep``, all at once, from the calling
    thread (see the module's docstring)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def steppable(env: gym.Env[Any, Any]) -> TaskEnv | None:
        """``env``'s :class:`TaskEnv` when stepping it with ``astep`` does what ``env.step``
        does: no wrapper but Gymnasium's order and first-step checks, both passed (a reset
        done, the first step checked), and no ``step`` of its own; else ``None``."""
        while isinstance(env, gym.Wrapper):
            if "step" in vars(env):
                return None
            if type(env) is OrderEnforcing:
                passed = env.has_reset
            elif type(env) is PassiveEnvChecker:
                passed = env.checked_step
            else:
                return None
            if not passed:
                return None
            env = env.env
        if not isinstance(env, TaskEnv) or "step" in vars(env) or type(env).step is not TaskEnv.step:
            return None
        return env

    def usable(self) -> bool:
        """Whether no event loop runs in this thread (this loop cannot run inside one)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return True
        return False

    def step(self, envs: Sequence[TaskEnv], actions: Sequence[Any]) -> list[Step]:
        """Every env's ``astep`` of its action, gathered; the first exception is raised once
        all have run."""
        if self._loop is None:
            self._loop = _new_loop()
        found = self._loop.run_until_complete(self._gather(envs, actions))
        for result in found:
            if isinstance(result, BaseException):
                raise result
        return cast(list[Step], found)

    @staticmethod
    async def _gather(envs: Sequence[TaskEnv], actions: Sequence[Any]) -> list[Any]:
        return await asyncio.gather(*(env.astep(a) for env, a in zip(envs, actions, strict=True)),
                                    return_exceptions=True)

    def close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None


def _new_loop() -> asyncio.AbstractEventLoop:
    """uvloop's event loop when it is installed (``taskgym[fast]``), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class TaskVectorEnv(gym.vector.VectorEnv[dict[str, Any], tuple[Any, ...], np.ndarray]):
    """``num_envs`` taskgym envs of ``env_id``, stepped concurrently by threads of this process.

    Args:
        env_id: a registered id (``"coding-terminal-v0"`` or ``"taskgym/coding-terminal-v0"``).
        num_envs: how many sub-envs.
        autoreset_mode: Gymnasium's autoreset mode (``NEXT_STEP``, ``SAME_STEP``, ``DISABLED``
            or their names); ``NEXT_STEP``: a sub-env that ended resets on the next ``step``,
            which ignores its action.
        max_workers: threads stepping the sub-envs (the calling thread included);
            ``None``: one per sub-env. With fewer, each steps its sub-envs one after another.
        stepping: ``"threads"`` or ``"loop"`` (see the module's docstring).
        **env_kwargs: keyword arguments of every sub-env (``tasks``, ``sandbox``,
            ``max_steps``...), as :func:`taskgym.make` takes them.
    """

    def __init__(self, env_id: str, num_envs: int, *,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                 max_workers: int | None = None, stepping: str = "threads",
                 **env_kwargs: Any) -> None:
        from taskgym.core.registry import make  # the registry names this class: import late

        if num_envs < 1:
            raise ValueError(f"num_envs={num_envs}: a vector env needs at least one sub-env")
        if max_workers is not None and max_workers < 1:
            raise ValueError(f"max_workers={max_workers}: at least 1 (or None: one per sub-env)")
        if stepping not in STEPPING:
            raise ValueError(f"stepping={stepping!r}: choose one of {', '.join(STEPPING)}")
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
        self.metadata = {**first.metadata, "autoreset_mode": self.autoreset_mode}
        self.render_mode = first.render_mode
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._threads = _Threads(min(max_workers or num_envs, num_envs))
        self._loop = _Loop() if stepping == "loop" else None
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
            raise ValueError(f"{len(batch)} actions for {self.num_envs} sub-envs: give one "
                             "action per sub-env")
        stepped = self._step_on_loop(batch)
        if stepped is None:
            calls = [self._step_call(i, action) for i, action in enumerate(batch)]
            stepped = self._threads.run(calls)
        rewards = np.zeros(self.num_envs, dtype=np.float64)
        terminated = np.zeros(self.num_envs, dtype=np.bool_)
        truncated = np.zeros(self.num_envs, dtype=np.bool_)
        infos: list[tuple[int, dict[str, Any]]] = []
        for i, (obs, reward, term, trunc, info) in enumerate(stepped):
            self._observations[i] = obs
            rewards[i], terminated[i], truncated[i] = reward, term, trunc
            infos.append((i, info))
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
            if self._loop is not None:
                self._loop.close()

    # -- the pieces ---------------------------------------------------------------------
    def _seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, int | np.integer):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"{len(seeds)} seeds for {self.num_envs} sub-envs: give one per "
                             "sub-env, an int, or None")
        return seeds

    def _reset_mask(self, mask: Any) -> np.ndarray:
        if mask is None:
            return np.ones(self.num_envs, dtype=np.bool_)
        if not (isinstance(mask, np.ndarray) and mask.dtype == np.bool_
                and mask.shape == (self.num_envs,) and mask.any()):
            raise ValueError(f"options['reset_mask'] must be a numpy bool array of shape "
                             f"({self.num_envs},) with at least one True")
        return mask

    def _reset_call(self, i: int, seed: int | None, options: dict[str, Any]
                    ) -> Callable[[], tuple[Any, dict[str, Any]]]:
        env = self.envs[i]
        return lambda: env.reset(seed=seed, options=options or None)

    def _step_on_loop(self, batch: list[Any]) -> list[Step] | None:
        """The batch stepped on the private event loop (``SAME_STEP``'s resets after it, from
        the threads), or ``None`` when the env steps from threads, a sub-env cannot be
        stepped on the loop (see :class:`_Loop`) or one resets now (``NEXT_STEP``)."""
        if self._loop is None or (self.autoreset_mode == AutoresetMode.NEXT_STEP
                                  and self._autoreset.any()):
            return None
        envs = [self._loop.steppable(env) for env in self.envs]
        if None in envs or not self._loop.usable():
            return None
        stepped = self._loop.step(cast(list[TaskEnv], envs), batch)
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
        fifth of the time with 16 sub-envs). Values of one key of different types make an
        object array."""
        by_key: dict[str, list[tuple[int, Any]]] = {}
        for i, info in infos:
            for key, value in info.items():
                by_key.setdefault(key, []).append((i, value))
        batched: dict[str, Any] = {}
        for key, found in by_key.items():
            first = found[0][1]
            same = all(type(value) is type(first) for _, value in found)
            array: Any
            indices = [i for i, _ in found]
            where: Any = slice(None) if indices == self._all else indices  # no fancy indexing
            if key != "final_obs" and same and isinstance(first, dict):
                array = self._batch_infos(found)
            elif key != "final_obs" and same and (type(first) in (int, float, bool)
                                                   or isinstance(first, np.number)):
                array = np.zeros(self.num_envs, dtype=type(first))
                array[where] = [value for _, value in found]
            elif key != "final_obs" and same and isinstance(first, np.ndarray):
                array = np.zeros((self.num_envs, *first.shape), dtype=first.dtype)
                array[where] = [value for _, value in found]
            else:
                array = np.full(self.num_envs, None, dtype=object)
                for i, value in found:
                    array[i] = value
            mask = np.zeros(self.num_envs, dtype=np.bool_)
            mask[where] = True
            batched[key], batched[f"_{key}"] = array, mask
        return batched

    def _batch(self) -> dict[str, Any]:
        """The sub-envs' observations batched as ``SyncVectorEnv`` batches them."""
        empty = create_empty_array(self.single_observation_space, n=self.num_envs)
        return cast(dict[str, Any], concatenate(self.single_observation_space,
                                                self._observations, cast(Any, empty)))
