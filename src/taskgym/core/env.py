"""The Gymnasium environment every taskgym domain builds on: its episode's life.

A domain subclasses :class:`TaskEnv`, declares its data as class attributes (where its
curated tasks live, its generators, the modules it needs) and supplies three things: its
tools, a verifier, and the oracle's actions. The base class owns the rest, one concept per
module:

- this module: the episode's life (``reset``: pick a task, start its sandbox, call the one
  hook for the domain's per-episode state, :meth:`TaskEnv.start_episode`; ``close``), the
  sandbox's shape (:meth:`TaskEnv.sandbox_spec`) and the ``submit`` tool that keeps its
  arguments for the verifier (:meth:`TaskEnv.submit_tool`);
- :mod:`taskgym.core.env_step`: a step, parsing actions (never raising on bad input), tool
  dispatch, budgets, errors and crashes;
- :mod:`taskgym.core.env_grading`: the grade at the end, what the grader needs, warm graders;
- :mod:`taskgym.core.env_tasks`: task sets (curated, generated, a user's folders);
- :mod:`taskgym.core.env_needs`: what the env needs on this machine, install hints, doctor lines;
- :mod:`taskgym.core.env_snapshots`: snapshots, restores, forks, clones.

``step()`` never raises for anything the agent sends. A bad action, or a tool failing with a
:class:`TaskgymError` (the backends raise only :class:`SandboxError` subclasses, never a bare
``OSError``), is an error observation and the episode goes on. The step that ends an episode
carries its verdict (``info["verdict"]``): ``"graded"``, or ``"none"`` when the environment
failed rather than the policy (:mod:`taskgym.core.verdicts` decides; reward 0.0,
``terminated`` True, ``info["failure"]`` the class), which ``on_no_verdict="raise"`` turns into
a :class:`~taskgym.errors.NoVerdictError`. Any other exception (in a tool, in the verifier, or
while stopping the sandbox) is a crash: a bug of taskgym or of the env, not something the agent
did. It ends the episode with no verdict (class ``taskgym_crash``) and ``info["crash"]`` holding
its type, message and traceback.
"""

from __future__ import annotations

import abc
import errno
import functools
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
from pydantic import BaseModel

from taskgym.core.env_grading import EnvGrading
from taskgym.core.env_needs import EnvNeeds
from taskgym.core.env_snapshots import EnvSnapshots
from taskgym.core.env_step import EnvStepping, Observation, StepResult
from taskgym.core.env_tasks import EnvTasks
from taskgym.core.preflight import preflight
from taskgym.core.reward import RewardResult
from taskgym.core.spaces import ToolCallSpace, UnicodeText
from taskgym.core.task import Limits, Task, TaskSet
from taskgym.core.tool import SubmitArgs, Tool, ToolResult, submit_tool
from taskgym.core.workspace import task_image
from taskgym.errors import ConfigError, SandboxError
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
from taskgym.sandbox.grading.warm_leases import Lease
from taskgym.sandbox.host.blocking import run_blocking
from taskgym.sandbox.host.os_errors import resource_error

__all__ = ["Observation", "StepResult", "TaskEnv"]

ON_NO_VERDICT = ("end", "raise")
"""The values of ``on_no_verdict`` (see :class:`TaskEnv`)."""
RESET_OPTIONS = ("task_id", "replay")
"""The keys ``reset(options=...)`` accepts; any other raises :class:`ConfigError`."""


class TaskEnv(EnvSnapshots, EnvStepping, EnvGrading, EnvNeeds, EnvTasks,
              gym.Env[Observation, Any], abc.ABC):
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
    """The env's container image (built from its :attr:`image_folder` by ``taskgym images
    build``), used by container backends; ``None``: the backend's base image."""
    image_folder: ClassVar[str | Path | None] = None
    """The folder holding the Dockerfile of :attr:`image`: a path, absolute or relative to
    taskgym's ``envs/`` folder; ``None``: ``envs/<env id>`` when it has one. A plugin names its
    own folder, and ``taskgym images build`` builds it too."""
    submission: BaseModel | None = None
    """The arguments of the episode's last ``submit`` (:meth:`submit_tool`), for ``verify``;
    ``None`` until the agent submits. Reset at every ``reset``, carried by snapshots."""

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
        self.check_needs(isinstance(self._backend_config, LocalConfig))
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

    @abc.abstractmethod
    def make_tools(self) -> list[Tool]:
        """The tools of this domain (``submit`` included)."""

    @abc.abstractmethod
    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        """Actions that solve ``task`` (from its reference solution), ending with submit."""

    def start_episode(self, task: Task) -> Mapping[str, Any] | None:
        """The one hook for the domain's per-episode state: ``reset`` calls it once ``task``'s
        sandbox runs and before the agent acts (and :attr:`submission` is cleared). Set the
        attributes :attr:`episode_attributes` names here (snapshots carry them), check the
        task (raise :class:`ConfigError`), prepare the sandbox. Returns what to add to
        ``reset``'s info, if anything."""
        return None

    def submit_tool(self, description: str = "Submit your work for grading; this ends the "
                    "episode.", args: type[BaseModel] = SubmitArgs,
                    then: Callable[[Any], ToolResult | None] | None = None) -> Tool:
        """The ``submit`` tool: keeps its arguments in :attr:`submission` for ``verify``, then
        returns ``then(args)`` when given (run in the pool under ``astep``; a result that is
        not ``done`` goes on), else ``"submitted"``, which ends the episode."""

        def keep(submitted: BaseModel) -> ToolResult | None:
            self.submission = submitted
            return then(submitted) if then is not None else None

        return submit_tool(description, args, keep, inline=then is None)

    def workspace_seed(self, task: Task) -> Path | None:
        """Host folder copied into the workspace at reset."""
        return None

    def sandbox_spec(self, task: Task) -> SandboxSpec:
        """Sandbox shape and limits for ``task``."""
        return self.limits(task).sandbox_spec(image=self.container_image(task))

    def container_image(self, task: Task) -> str | None:
        """The task folder's own Dockerfile folder, else Harbor's ``[environment] docker_image``,
        else :attr:`image` (see :func:`~taskgym.core.workspace.task_image`)."""
        return task_image(task, self.image)

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
        self.expect_grade(task)
        self._steps = 0
        self.episode_limits = self.limits(task)  # the task's budgets with this env's overrides
        self._deadline = time.monotonic() + self.episode_limits.timeout_sec
        self._over = False
        self.last_reward = None
        self.submission = None
        started = self.start_episode(task)
        text = task.instruction
        self._transcript = [f"# task {task.id}\n{text}"]
        info = {"task_id": task.id, "domain": self.domain, "tools": self._tool_specs, "step": 0,
                **(started or {})}
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

