""":class:`EnvPool`: async Ray actors that own the sandboxes of taskgym episodes on their nodes.

Each actor (:class:`~taskgym.ray.host.EnvHost`) is one process holding up to
``sessions_per_actor`` episodes, driven from its event loop (Ray's ``max_concurrency`` is
``sessions_per_actor`` plus one slot for the pool's own calls), with explicit ``num_cpus``,
placed by Ray's ``SPREAD`` strategy (or a ``scheduling_strategy`` of yours), custom
``resources`` or a ``label_selector``. Ray restarts a dead actor up to ``max_restarts`` times
but never retries a call (``max_task_retries=0``: a step is not idempotent); the episodes that
ran in it end with no verdict (:mod:`taskgym.ray.episode`). Starts are back-pressured: a reset
when every session of the pool holds an episode, or a call to an actor that has
``max_pending_calls`` calls in flight, raises :class:`PoolCapacityError` at once instead of
queueing. Closing the pool closes every env, hence every sandbox, then ends the actors.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from taskgym.errors import ConfigError, needs_extra
from taskgym.ray.episode import Plan, PooledEnv, drive, drive_async
from taskgym.ray.host import EnvHost, PoolCapacityError, PoolError

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["ActorSlot", "EnvPool"]

CLOSE_TIMEOUT = 120.0
"""Seconds the pool's close waits for an actor to close its envs before it ends it anyway."""


def ray_module() -> Any:
    """The ``ray`` package, or :class:`MissingDependencyError` saying how to install it (on
    every node of the cluster)."""
    with needs_extra("taskgym.ray", "ray"):
        import ray
    return ray


@dataclass
class ActorSlot:
    """The pool's record of one actor: its handle, where it runs, the envs it holds."""

    index: int
    handle: Any
    node_id: str = ""
    hostname: str = ""
    pid: int = 0
    envs: set[str] = field(default_factory=set)
    in_flight: int = 0
    """The episodes' calls submitted to it whose answer the driver has not had yet."""
    dead: bool = False
    """Ray said the actor is gone for good (it will not be restarted)."""


class EnvPool:
    """Episodes of ``env_id`` on Ray actors. ``env()`` gives an env to drive; the pool's
    actors start (and are placed) when the pool is made.

    Args:
        env_id: the registered env (every node needs taskgym with that env's extras).
        actors: how many actors (processes) to start.
        sessions_per_actor: episodes one actor holds at once (its ``max_concurrency``).
        num_cpus: CPUs Ray reserves for each actor (fractions allowed).
        resources: custom Ray resources each actor needs (``{"sandbox_host": 1}``).
        label_selector: node labels an actor must run on (``{"taskgym-node": "cpu"}``).
        scheduling_strategy: Ray's strategy (``"SPREAD"`` by default, ``"DEFAULT"``, or a
            placement group or node affinity strategy).
        max_pending_calls: the episodes' calls one actor may have in flight (submitted,
            not yet answered); past it a call raises :class:`PoolCapacityError` (default:
            twice ``sessions_per_actor``). Counted by the pool as each answer arrives; Ray's
            own ``max_pending_calls`` of the actor is set above it (room for the closes and
            the pool's calls), as a backstop.
        max_restarts: how many times Ray restarts a dead actor (its episodes end anyway).
        start_timeout: seconds to wait for every actor to be placed and started.
        actor_options: more Ray actor options (``runtime_env``, ``memory``...);
            ``max_task_retries`` other than 0 is refused.
        **make_kwargs: the env's keywords (``tasks``, ``sandbox``, ``max_steps``...), which
            must be picklable (a sandbox name or config, not a ``Backend`` instance).
    """

    def __init__(self, env_id: str, *, actors: int = 2, sessions_per_actor: int = 4,
                 num_cpus: float = 1.0, resources: Mapping[str, float] | None = None,
                 label_selector: Mapping[str, str] | None = None,
                 scheduling_strategy: Any = "SPREAD", max_pending_calls: int | None = None,
                 max_restarts: int = 3, start_timeout: float = 120.0,
                 actor_options: Mapping[str, Any] | None = None, **make_kwargs: Any) -> None:
        ray = ray_module()
        from taskgym.sandbox import Backend

        if isinstance(make_kwargs.get("sandbox"), Backend):
            raise ConfigError("an EnvPool's actors make their own sandbox backend on their "
                              "nodes: pass sandbox= as a name (\"local\", \"docker\") or a "
                              "config, not a Backend instance")
        for name, value in (("actors", actors), ("sessions_per_actor", sessions_per_actor)):
            if type(value) is not int or value < 1:
                raise ConfigError(f"{name} must be a positive integer, not {value!r}")
        extra = dict(actor_options or {})
        if extra.get("max_task_retries", 0) != 0:
            raise ConfigError("max_task_retries must stay 0: Ray would run a step again after "
                              "an actor's death, and a step is not idempotent")
        self.env_id, self.make_kwargs = env_id, dict(make_kwargs)
        self.sessions_per_actor = sessions_per_actor
        self.max_pending_calls = (2 * sessions_per_actor if max_pending_calls is None
                                  else max_pending_calls)
        self.options: dict[str, Any] = {
            "num_cpus": num_cpus, "max_concurrency": sessions_per_actor + 1,
            "max_restarts": max_restarts, "max_task_retries": 0,
            "max_pending_calls": self.max_pending_calls + sessions_per_actor + 1,
            "scheduling_strategy": scheduling_strategy, **extra}
        if resources:
            self.options["resources"] = dict(resources)
        if label_selector:
            self.options["label_selector"] = dict(label_selector)
        host = ray.remote(EnvHost).options(**self.options)
        self.slots = [ActorSlot(i, host.remote(env_id, self.make_kwargs, sessions_per_actor))
                      for i in range(actors)]
        self.closed = False
        try:
            self._started(ray, start_timeout)
        except BaseException:
            for slot in self.slots:
                ray.kill(slot.handle, no_restart=True)
            self.closed = True
            raise

    def _started(self, ray: Any, timeout: float) -> None:
        refs = [slot.handle.where.remote() for slot in self.slots]
        try:
            places = ray.get(refs, timeout=timeout)
        except ray.exceptions.GetTimeoutError:
            wanted = {key: self.options[key] for key in ("num_cpus", "resources", "label_selector")
                      if key in self.options}
            raise PoolError(f"the EnvPool's {len(self.slots)} actors were not all placed and "
                            f"started within {timeout:g}s: no node offers {wanted} to each, or "
                            "making the env is slow there (`ray status` shows the cluster's "
                            "free resources; start_timeout= waits longer)") from None
        except ray.exceptions.RayActorError as exc:
            raise PoolError(f"an EnvPool actor could not start {self.env_id!r} on its node: "
                            f"{exc}") from None
        for slot, place in zip(self.slots, places, strict=True):
            slot.node_id, slot.hostname, slot.pid = place["node_id"], place["hostname"], place["pid"]

    # -- episodes ----------------------------------------------------------------------------
    def env(self) -> PooledEnv:
        """A new env of the pool (nothing starts until its first reset)."""
        self._check_open()
        return PooledEnv(self)

    def claim(self, env: PooledEnv) -> ActorSlot:
        """The actor of ``env``: the one it holds, else the live actor with the fewest
        episodes; :class:`PoolCapacityError` when every session holds one."""
        self._check_open()
        if env.slot is not None:
            return env.slot
        live = [slot for slot in self.slots if not slot.dead]
        if not live:
            raise PoolError(f"every actor of the EnvPool of {self.env_id!r} is dead (restarts "
                            "exhausted or killed); make a new pool")
        slot = min(live, key=lambda s: len(s.envs))
        if len(slot.envs) >= self.sessions_per_actor:
            used = sum(len(s.envs) for s in live)
            raise PoolCapacityError(
                f"every session of the EnvPool holds an episode ({used} of "
                f"{len(live)} actors x {self.sessions_per_actor} sessions): close an env "
                "(aclose) before resetting another, or make the pool with more actors or "
                "sessions_per_actor")
        slot.envs.add(env.session)
        env.slot = slot
        return slot

    def release(self, env: PooledEnv, failure: BaseException | None = None) -> None:
        """``env`` no longer holds a session of its actor; after a ``failure`` of the actor,
        its close is sent on (best effort: a restarted actor has nothing to close)."""
        slot, env.slot = env.slot, None
        if slot is None:
            return
        slot.envs.discard(env.session)
        if isinstance(failure, ray_module().exceptions.ActorDiedError):
            slot.dead = True
        elif failure is not None:
            self.close_call(slot, env.session)

    @staticmethod
    def close_call(slot: ActorSlot, session: str) -> Any:
        """Submit the close of ``session`` to ``slot``'s actor, outside ``max_pending_calls``
        (closing frees what the limit protects): its object ref, or ``None`` when the actor
        is dead or Ray's own limit refused it (the pool's close closes it then)."""
        if slot.dead:
            return None
        try:
            return slot.handle.close.remote(session)
        except ray_module().exceptions.PendingCallsLimitExceeded:
            return None

    def call(self, slot: ActorSlot, method: str, *args: Any) -> Any:
        """Submit one call of an episode to ``slot``'s actor (its object ref; call
        :meth:`answered` once its answer or error is in); :class:`PoolCapacityError` when the
        actor has ``max_pending_calls`` calls in flight."""
        ray = ray_module()
        refused = PoolCapacityError(
            f"actor {slot.index} of the EnvPool has {self.max_pending_calls} calls in flight "
            "(max_pending_calls): wait for some to finish, or make the pool with more actors "
            "or a larger max_pending_calls")
        if slot.in_flight >= self.max_pending_calls:
            raise refused
        try:
            ref = getattr(slot.handle, method).remote(*args)
        except ray.exceptions.PendingCallsLimitExceeded:
            raise refused from None
        slot.in_flight += 1
        return ref

    @staticmethod
    def answered(slot: ActorSlot) -> None:
        """A call :meth:`call` submitted to ``slot`` has its answer (or its error)."""
        slot.in_flight -= 1

    @staticmethod
    def is_actor_failure(exc: BaseException) -> bool:
        """Whether ``exc`` says the actor (not the env) failed: dead, unreachable, its node
        gone."""
        ray = ray_module()
        return isinstance(exc, (ray.exceptions.RayActorError, ray.exceptions.NodeDiedError,
                                ray.exceptions.WorkerCrashedError))

    def placement(self) -> list[dict[str, Any]]:
        """Where each live actor runs now (``index``, ``node_id``, ``hostname``, ``pid``,
        ``episodes``), asked of the actors (a restarted one has a new pid)."""
        ray = ray_module()
        found = []
        for slot in self.slots:
            if slot.dead:
                continue
            try:
                place = ray.get(self.call(slot, "where"), timeout=CLOSE_TIMEOUT)
            except ray.exceptions.RayActorError:
                continue
            slot.node_id, slot.hostname, slot.pid = place["node_id"], place["hostname"], place["pid"]
            found.append({"index": slot.index, **place})
        return found

    def _check_open(self) -> None:
        if self.closed:
            raise PoolError("this EnvPool is closed; make a new one")

    # -- closing -----------------------------------------------------------------------------
    def _close_plan(self) -> Plan:
        if self.closed:
            return None
        self.closed = True
        ray = ray_module()
        for slot in self.slots:
            slot.envs.clear()
            if slot.dead:
                continue
            try:  # the control slot of max_concurrency is free for this call
                yield slot.handle.close_all.remote()
            except Exception:  # dead, or stuck past CLOSE_TIMEOUT: ending it ends its sandboxes
                pass
            ray.kill(slot.handle, no_restart=True)
            slot.dead = True
        return None

    def close(self) -> None:
        """Close every env's sandbox, then end the actors (their envs become over: a step
        is an error observation, a reset raises :class:`PoolError`)."""
        drive(self._close_plan(), timeout=CLOSE_TIMEOUT)

    async def aclose(self) -> None:
        """:meth:`close` for asyncio."""
        await drive_async(self._close_plan(), timeout=CLOSE_TIMEOUT)

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> EnvPool:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, value: BaseException | None,
                        traceback: TracebackType | None) -> None:
        await self.aclose()
