"""The Gymnasium environment every taskgym domain builds on.

A domain subclasses :class:`TaskEnv`, declares its data as class attributes (where its
curated tasks live, its generators, the modules it needs) and supplies three things: its
tools, a verifier, and the oracle's actions. The base class owns the rest: task sets
(curated, generated, a user's folders), picking a task, starting and stopping the sandbox,
parsing actions (never raising on bad input), budgets, and grading once the agent submits
or runs out of steps or time.

``step()`` never raises for anything the agent sends. A bad action, or a tool failing with a
:class:`TaskgymError` (the backends raise only :class:`SandboxError` subclasses, never a bare
``OSError``), is an error observation and the episode goes on. The step that ends an episode
carries its verdict (``info["verdict"]``): ``"graded"``, or ``"none"`` when the environment
failed rather than the policy (:mod:`taskgym.core.verdicts` decides; reward 0.0,
``terminated`` True, ``info["failure"]`` the class), which ``on_no_verdict="raise"`` turns into
a :class:`~taskgym.errors.NoVerdictError`. Any other exception (in a tool, in the verifier, or
while stopping the sandbox) is a crash: a bug of taskgym or of the env, not something the agent
did. It ends the episode with no verdict (class ``taskgym_crash``) and ``info["crash"]`` holding
its type, message and traceback. A step (``step`` and ``astep``, one code path) is in
:mod:`taskgym.core.env_step`.
"""

from __future__ import annotations

import abc
import copy
import difflib
import errno
import functools
import importlib
import importlib.util
import inspect
import time
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
import numpy as np

from taskgym.core.env_step import EnvStepping, Observation, StepResult
from taskgym.core.preflight import GraderNeeds, Requirement, own_image_fix, preflight
from taskgym.core.reward import RewardResult
from taskgym.core.spaces import ToolCallSpace, UnicodeText
from taskgym.core.task import FolderTaskSet, GeneratedTaskSet, Limits, Task, TaskSet, source_version
from taskgym.core.tool import Tool
from taskgym.core.workspace import task_image
from taskgym.errors import ConfigError, MissingDependencyError, SandboxError
from taskgym.paths import envs_dir
from taskgym.sandbox import (
    Backend,
    DockerConfig,
    LocalConfig,
    ResourceUsage,
    SandboxSpec,
    Session,
    backend_config,
    get_backend,
)
from taskgym.sandbox.grading import Grader
from taskgym.sandbox.grading.warm_leases import Lease, release_dropped
from taskgym.sandbox.host.blocking import run_blocking
from taskgym.sandbox.host.os_errors import resource_error
from taskgym.sandbox.snapshots.spares import Spares

if TYPE_CHECKING:
    from typing import Self

    from taskgym.core.episode_snapshot import EpisodeSnapshot

__all__ = ["Observation", "StepResult", "TaskEnv"]

ON_NO_VERDICT = ("end", "raise")
"""The values of ``on_no_verdict`` (see :class:`TaskEnv`)."""
RESET_OPTIONS = ("task_id", "replay")
"""The keys ``reset(options=...)`` accepts; any other raises :class:`ConfigError`."""


class TaskEnv(EnvStepping, gym.Env[Observation, Any], abc.ABC):
    """A task-sandbox environment: text observations, tool-call actions, verified reward.

    Args:
        tasks: a :class:`TaskSet`, a path to a folder of task folders (or one task folder),
            or ``None`` for the domain's curated set. Domains may accept more names.
        sandbox: ``"local"`` (bubblewrap, the default), ``"docker"``, a backend config
            (:class:`~taskgym.sandbox.LocalConfig`, :class:`~taskgym.sandbox.DockerConfig` or a
            mapping with a ``type`` key), or a :class:`Backend` instance.
        max_steps: override every task's step budget.
        timeout_sec: override every task's wall-clock budget (seconds from ``reset``).
        render_mode: ``"ansi"`` makes :meth:`render` return the episode transcript.
        on_no_verdict: what a step does when the episode ends with no verdict (the
            environment failed, not the policy: ``info["verdict"] == "none"``): ``"end"`` (the
            default) returns the end (reward 0.0, ``terminated`` True, ``info["failure"]``);
            ``"raise"`` raises :class:`~taskgym.errors.NoVerdictError` instead, once the
            sandbox is gone (``reset()`` starts the next episode).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 1}
    domain: ClassVar[str]
    description: ClassVar[str]
    image: ClassVar[str | None] = None
    """The env's container image (built from ``envs/<id>/Dockerfile`` by ``taskgym images
    build``), used by container backends; ``None``: the backend's base image."""
    curated: ClassVar[str | Path | None] = None
    """The folder of the curated task folders (``tasks="curated"``, the default): a path,
    absolute or relative to taskgym's ``envs/`` folder (``"<env id>/tasks"``)."""
    generators: ClassVar[tuple[str, ...]] = ()
    """Names of the seeded generators (``tasks="generated:<name>"``), made by :attr:`generate`."""
    generate: ClassVar[str | None] = None
    """``"module:function"`` of ``function(name, seed, dest)``, which writes one complete task
    folder at ``dest``; cached generated tasks follow the sources of that module's folder."""
    generated_size: ClassVar[int] = 100
    """How many seeds iterating a generated task set covers."""
    grader: ClassVar[str | None] = None
    """``"module:function"`` of ``function(task, image)`` giving the
    :class:`~taskgym.sandbox.grading.Grader` that :meth:`verify` grades with (``image``: the
    task's :meth:`container_image`), when it imports modules first: each reset then counts its
    episode in the warm graders of that kind, so that one waits when it grades
    (:mod:`taskgym.sandbox.grading.warm`)."""
    requires: ClassVar[tuple[str, ...]] = ()
    """Modules this process must be able to import to run the env."""
    local_requires: ClassVar[tuple[str, ...]] = ()
    """Modules the local sandbox needs from this process's Python (``host_python``)."""
    extra: ClassVar[str | None] = None
    """The taskgym extra that installs :attr:`requires` (``pip install 'taskgym[<extra>]'``)."""
    grader_requirements: ClassVar[tuple[Requirement, ...]] = ()
    """What the grader needs in its sandbox's view (programs, Python modules), checked by
    :meth:`reset` before an episode starts (see :meth:`grader_needs`)."""
    restored_observation: Observation | None = None
    """The observation the episode was at when its snapshot was taken, after :meth:`restore`
    or :meth:`fork` (for replayed prefixes and :func:`taskgym.rollouts.group`: the last
    step's); ``None`` when the snapshot did not record one."""
    episode_attributes: ClassVar[tuple[str, ...]] = ()
    """Attributes holding the domain's own state of an episode (a multi-step task's progress),
    carried by :meth:`snapshot`, :meth:`restore` and :meth:`fork`."""

    _init_args: tuple[tuple[Any, ...], dict[str, Any]]
    _spares: Spares | None = None

    def __new__(cls, *args: Any, **kwargs: Any) -> Self:
        env = super().__new__(cls)
        env._init_args = (args, dict(kwargs))  # what clone() makes its twins with
        return env

    def __init__(
        self,
        tasks: TaskSet | str | Path | None = None,
        sandbox: str | Mapping[str, Any] | LocalConfig | DockerConfig | Backend = "local",
        max_steps: int | None = None,
        render_mode: str | None = None,
        timeout_sec: float | None = None,
        on_no_verdict: str = "end",
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}")
        if on_no_verdict not in ON_NO_VERDICT:
            raise ConfigError(f"on_no_verdict must be one of {', '.join(ON_NO_VERDICT)}, not "
                              f"{on_no_verdict!r}")
        self.on_no_verdict = on_no_verdict
        self._backend: Backend | None = sandbox if isinstance(sandbox, Backend) else None
        self._backend_config = None if isinstance(sandbox, Backend) else backend_config(sandbox)
        self._check_requirements()
        self.render_mode = render_mode
        self.task_set = self.resolve_tasks(tasks)
        self._overrides = {key: value for key, value in
                           (("max_steps", max_steps), ("timeout_sec", timeout_sec))
                           if value is not None}
        self.tools = self.make_tools()
        self._tools_by_name: Mapping[str, Tool] = {t.name: t for t in self.tools}
        self._tool_specs = [t.openai() for t in self.tools]
        self.observation_space: gym.spaces.Space[Observation] = gym.spaces.Dict(  # type: ignore[assignment]
            {"text": UnicodeText()})
        self.action_space = ToolCallSpace(self.tools)
        self.task: Task | None = None
        self._session: Session | None = None
        self._steps = 0
        self._deadline = 0.0
        self.episode_limits = Limits()
        self._over = True
        self._transcript: list[str] = []
        self.last_reward: RewardResult | None = None
        self.last_usage = ResourceUsage()
        """CPU time and peak memory of the last episode's agent sandbox."""
        self._lease: Lease | None = None

    # -- what a domain provides ------------------------------------------------------
    def default_tasks(self) -> TaskSet:
        """The curated task set used when ``tasks`` is not given (:attr:`curated`)."""
        if self.curated is None:
            raise ConfigError(f"{type(self).__name__} has no curated tasks; pass tasks=...")
        return FolderTaskSet(envs_dir() / self.curated, self.domain)

    @abc.abstractmethod
    def make_tools(self) -> list[Tool]:
        """The tools of this domain (``submit`` included)."""

    @abc.abstractmethod
    def verify(self, task: Task, session: Session) -> RewardResult:
        """Grade the final state; every agent process has been killed already."""

    @abc.abstractmethod
    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        """Actions that solve ``task`` (from its reference solution), ending with submit."""

    def named_tasks(self, name: str) -> TaskSet | None:
        """A task set known by name, else ``None``: ``"curated"`` (the default set),
        ``"generated"`` (every generator) and ``"generated:<name>[,<name>...]"``."""
        if name == "curated":
            return self.default_tasks()
        if name == "generated" or name.startswith("generated:"):
            return self.generated_tasks(tuple(n for n in name.partition(":")[2].split(",") if n))
        return None

    def generated_tasks(self, names: tuple[str, ...]) -> TaskSet | None:
        """Seeded tasks of the named :attr:`generators` (every one when ``names`` is empty)."""
        if not self.generators or self.generate is None:
            return None
        unknown = [n for n in names if n not in self.generators]
        if unknown:
            raise ConfigError(f"unknown generator {unknown[0]!r} of {self.domain}; choose from "
                              f"{', '.join(self.generators)}")
        module_name, _, function = self.generate.partition(":")
        module = importlib.import_module(module_name)
        generate = getattr(module, function)
        version = source_version(*sorted(Path(module.__file__ or "").parent.rglob("*.py")))
        chosen = names or self.generators
        return GeneratedTaskSet(
            {n: functools.partial(generate, n) for n in chosen}, self.domain,
            {n: version for n in chosen}, size=self.generated_size)

    def _check_requirements(self) -> None:
        needed = list(self.requires)
        if isinstance(self._backend_config, LocalConfig):
            needed += self.local_requires
        missing = [m for m in dict.fromkeys(needed) if importlib.util.find_spec(m) is None]
        if missing:
            where = (" (the local sandbox runs them with this Python)"
                     if set(missing) <= set(self.local_requires) else "")
            install = f"pip install 'taskgym[{self.extra}]'" if self.extra else "install them"
            raise MissingDependencyError(
                f"{type(self).__name__} needs {', '.join(missing)}{where}: {install}")

    def workspace_seed(self, task: Task) -> Path | None:
        """Host folder copied into the workspace at reset."""
        return None

    def grader_needs(self, task: Task) -> GraderNeeds | None:
        """What ``task``'s grader needs in the view of its sandbox, which :meth:`reset` checks
        before the episode starts (:mod:`taskgym.core.preflight`): :attr:`grader_requirements`
        in the view of the :attr:`grader`'s spec (else the agent's sandbox's); ``None``:
        nothing to check."""
        if not self.grader_requirements:
            return None
        spec = self.make_grader(task).spec if self.grader else self.sandbox_spec(task)
        return GraderNeeds(self.grader_requirements, image=spec.image,
                           host_python=spec.host_python,
                           image_fix=own_image_fix(spec.image, self.image))

    def make_grader(self, task: Task) -> Grader:
        """The :class:`~taskgym.sandbox.grading.Grader` of :attr:`grader` for ``task``."""
        assert self.grader is not None
        module, _, function = self.grader.partition(":")
        made: Grader = getattr(importlib.import_module(module), function)(
            task, self.container_image(task))
        return made

    def sandbox_spec(self, task: Task) -> SandboxSpec:
        """Sandbox shape and limits for ``task``."""
        limits = self.limits(task)
        return SandboxSpec(memory_mb=limits.memory_mb, pids=limits.pids, cpus=limits.cpus,
                           disk_mb=limits.disk_mb,
                           command_timeout_sec=limits.command_timeout_sec,
                           image=self.container_image(task))

    def container_image(self, task: Task) -> str | None:
        """The task folder's own Dockerfile folder, else Harbor's ``[environment] docker_image``,
        else :attr:`image` (see :func:`~taskgym.core.workspace.task_image`)."""
        return task_image(task, self.image)

    # -- helpers for domains ---------------------------------------------------------
    def resolve_tasks(self, tasks: TaskSet | str | Path | None) -> TaskSet:
        if tasks is None:
            return self.default_tasks()
        if isinstance(tasks, TaskSet):
            return tasks
        if isinstance(tasks, str):
            named = self.named_tasks(tasks)
            if named is not None:
                return named
            folder = Path(tasks).expanduser().resolve()
            if not folder.exists():
                names = self.task_set_names()
                near = difflib.get_close_matches(tasks, names, n=1)
                raise ConfigError(
                    f"tasks={tasks!r}: not a named task set, and the folder {folder} does not "
                    "exist." + (f" Did you mean {near[0]!r}?" if near else "")
                    + f" Named sets of {self.domain}: {', '.join(names)}")
        return FolderTaskSet(Path(tasks), self.domain)

    def task_set_names(self) -> list[str]:
        """The names :meth:`named_tasks` accepts (for error messages)."""
        generated = self.generated_tasks(())
        if generated is None:
            return ["curated"]
        generators = generated.generator_names if isinstance(generated, GeneratedTaskSet) else ()
        return ["curated", "generated", *(f"generated:{g}" for g in generators)]

    def limits(self, task: Task) -> Limits:
        """``task``'s budgets with this env's overrides (``max_steps``, ``timeout_sec``)."""
        if not self._overrides:
            return task.limits
        return task.limits.model_copy(update=self._overrides)

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            assert self._backend_config is not None
            self._backend = get_backend(self._backend_config)
        return self._backend

    @property
    def session(self) -> Session:
        """The running sandbox of the current episode."""
        if self._session is None:
            raise SandboxError("no episode is running; call reset() first")
        return self._session

    def remaining_seconds(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    def command_timeout(self) -> float:
        """The longest a tool call may take now: the task's per-command limit, bounded by the
        time left in the episode (at least one second)."""
        return max(1.0, min(self.episode_limits.command_timeout_sec, self.remaining_seconds()))

    # -- gymnasium API ---------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        options = options or {}
        unknown = sorted(map(str, set(options) - set(RESET_OPTIONS)))
        if unknown:  # refused before anything changes: the running episode goes on
            raise ConfigError(f"unknown reset option(s) {', '.join(map(repr, unknown))}; "
                              f"known: {', '.join(map(repr, RESET_OPTIONS))}")
        if "replay" in options:
            from taskgym.core.replay import replay_reset

            return replay_reset(self, seed, options)
        super().reset(seed=seed)
        self._end_session()
        if "task_id" in options:
            task = self.task_set.get(str(options["task_id"]))
        elif seed is not None:
            task = self.task_set.pick(seed)
        else:
            task = self.task_set.pick(int(self.np_random.integers(0, 2**31 - 1)))
        needs = self.grader_needs(task)
        if needs is not None:  # once per backend, view and needs (cached): never a step's cost
            preflight(self.backend, needs, f"{type(self).__name__}'s task {task.id}")
        self.task = task
        self._session = self.backend.start(self.sandbox_spec(task), self.workspace_seed(task))
        self._expect_grade(task)
        self._steps = 0
        self.episode_limits = self.limits(task)  # the task's budgets with this env's overrides
        self._deadline = time.monotonic() + self.episode_limits.timeout_sec
        self._over = False
        self.last_reward = None
        text = task.instruction
        self._transcript = [f"# task {task.id}\n{text}"]
        info = {"task_id": task.id, "domain": self.domain, "tools": self._tool_specs, "step": 0}
        return {"text": text}, info

    # -- asyncio API -----------------------------------------------------------------
    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """:meth:`reset` for asyncio, in the bounded pool (:mod:`taskgym.sandbox.host.blocking`):
        all a reset does blocks (stopping the last sandbox, starting bubblewrap or a
        container, a domain's own set-up), and a domain's ``reset`` override runs as it is,
        so the episode is the one ``reset`` gives. Running out of descriptors (with
        thousands of envs) is a :class:`SandboxError` naming the limit, wherever it happens."""
        try:
            return await run_blocking(functools.partial(self.reset, seed=seed, options=options))
        except OSError as exc:
            if exc.errno in (errno.EMFILE, errno.ENFILE):
                raise resource_error("could not reset the env", exc) from exc
            raise

    async def aclose(self) -> None:
        """:meth:`close` for asyncio (stopping the sandbox runs in the bounded pool)."""
        await run_blocking(self.close)

    def _end_session(self) -> None:
        session, self._session = self._session, None
        if self._lease is not None:
            self._lease.settle()
        if session is not None:
            session.close()

    def _expect_grade(self, task: Task) -> None:
        """Count the episode in the warm graders of its :attr:`grader`'s kind (a new lease
        when the task's kind is not the last one's)."""
        if self.grader is None:
            return
        made = self.make_grader(task)
        if made.preload is None:
            return
        old = lease = self._lease
        if lease is None or not lease.same(self.backend, made.spec, made.argv, made.preload):
            self._lease = lease = Lease(self.backend, made.spec, made.argv, made.preload)
            weakref.finalize(self, release_dropped, lease)  # an env dropped unclosed lets go too
            if old is not None:
                old.close()
        lease.expect()

    # -- snapshots and forks (taskgym.core.episode_snapshot, taskgym.core.replay) -------
    def snapshot(self) -> EpisodeSnapshot:
        """Save the running episode: workspace, shell state, task, steps, time used,
        limits, transcript, ``np_random`` and the domain's state (:meth:`episode_state`).
        Background processes are listed in ``snap.session.background``, not carried.
        Raises :class:`SandboxError` when no episode is running or it is over."""
        from taskgym.core.episode_snapshot import snapshot_env

        return snapshot_env(self)

    def restore(self, snap: EpisodeSnapshot) -> None:
        """Replace the current episode (if any) by the saved one, in a fresh sandbox; its
        deadline is now plus the time that was left. ``snap`` is unchanged (restore it again
        at will). Raises :class:`ConfigError` for a snapshot of another env class."""
        from taskgym.core.episode_snapshot import restore_env

        restore_env(self, snap)

    def fork(self, n: int) -> list[Self]:
        """``n`` independent envs of this class and configuration (made with this env's
        constructor arguments), each at this episode's current state in its own sandbox,
        with its own limits and grading. This episode goes on unchanged."""
        from taskgym.core.episode_snapshot import fork_env

        return fork_env(self, n)

    def fork_spares(self) -> Spares:
        """The started, unused sandboxes this env's forks fill (:mod:`taskgym.sandbox.snapshots.spares`),
        kept until the env is closed."""
        if self._spares is None:
            self._spares = Spares(self.backend)
        return self._spares

    def clone(self) -> Self:
        """A new env made with the arguments this one was made with (no episode yet). It
        shares this env's backend and task set (what those arguments made already), so a
        clone costs neither a backend probe nor a task-folder scan."""
        args, kwargs = self._init_args
        try:
            bound = inspect.signature(TaskEnv.__init__).bind(self, *args, **kwargs)
        except TypeError:  # a domain's own arguments: make it from them as they are
            return type(self)(*args, **kwargs)
        given = {**bound.arguments, "tasks": self.task_set, "sandbox": self.backend}
        del given["self"]
        twin = type(self)(**given)
        twin._init_args = self._init_args  # the same configuration (the replay cache's key)
        return twin

    def episode_state(self) -> dict[str, Any]:
        """The domain's own state of the running episode, for :meth:`snapshot`: a deep copy of
        each attribute :attr:`episode_attributes` names (the task itself is shared, not copied)."""
        return {name: copy.deepcopy(getattr(self, name), {id(self.task): self.task})
                for name in self.episode_attributes}

    def restore_episode_state(self, state: dict[str, Any]) -> None:
        """Take back what :meth:`episode_state` returned (a restore or a fork), copied again so
        that one snapshot can be restored many times."""
        for name in self.episode_attributes:
            if name in state:
                setattr(self, name, copy.deepcopy(state[name], {id(self.task): self.task}))

    @property
    def is_over(self) -> bool:
        """Whether no episode is running (before the first reset, or after its end)."""
        return self._over or self._session is None

    @property
    def steps_taken(self) -> int:
        return self._steps

    @property
    def transcript(self) -> list[str]:
        """The episode's transcript so far (its steps are recorded with ``render_mode="ansi"``)."""
        return list(self._transcript)

    def end_episode(self) -> None:
        """Close the running episode's sandbox, ungraded."""
        self._over = True
        self._end_session()

    def resume_episode(self, session: Session, task: Task, steps: int, limits: Limits,
                       deadline: float, transcript: list[str], rng: np.random.Generator) -> None:
        """Make ``session`` this env's running episode at that point (what a restore does)."""
        self.end_episode()
        self._session, self.task, self._steps = session, task, steps
        self.episode_limits, self._deadline = limits, deadline
        self._transcript, self._np_random = transcript, rng
        self._over = False
        self._expect_grade(task)
        self.last_reward = None

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return "\n\n".join(self._transcript)
        return None

    def close(self) -> None:
        self._over = True
        self._end_session()
        lease, self._lease = self._lease, None
        if lease is not None:
            lease.close()
        if self._spares is not None:
            self._spares.close()
        super().close()

