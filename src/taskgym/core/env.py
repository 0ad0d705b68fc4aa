"""The Gymnasium environment every taskgym domain builds on.

A domain subclasses :class:`TaskEnv`, declares its data as class attributes (where its
curated tasks live, its generators, the modules it needs) and supplies three things: its
tools, a verifier, and the oracle's actions. The base class owns the rest: task sets
(curated, generated, a user's folders), picking a task, starting and stopping the sandbox,
parsing actions (never raising on bad input), budgets, and grading once the agent submits
or runs out of steps or time.

``step()`` never raises. A bad action, or a tool failing with a :class:`TaskgymError` or an
``OSError``, is an error observation and the episode goes on. Any other exception (in a
tool, in the verifier, or while stopping the sandbox) is a crash: a bug of taskgym or of the
env, not something the agent did. It ends the episode ungraded (``truncated=True``, reward
0.0) with ``info["crash"]`` holding its type, message and traceback.
"""

from __future__ import annotations

import abc
import difflib
import functools
import importlib
import importlib.util
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym

from taskgym.core.reward import RewardResult
from taskgym.core.spaces import ToolCallSpace, UnicodeText
from taskgym.core.task import FolderTaskSet, GeneratedTaskSet, Limits, Task, TaskSet, source_version
from taskgym.core.tool import ActionError, Tool, ToolResult, parse_action
from taskgym.errors import ConfigError, MissingDependencyError, SandboxError, TaskgymError
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
from taskgym.sandbox.warm import close_warm_graders

__all__ = ["TaskEnv"]

Observation = dict[str, str]

RESET_OPTIONS = ("task_id",)
"""The keys ``reset(options=...)`` accepts; any other raises :class:`ConfigError`."""


class TaskEnv(gym.Env[Observation, Any], abc.ABC):
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
    requires: ClassVar[tuple[str, ...]] = ()
    """Modules this process must be able to import to run the env."""
    local_requires: ClassVar[tuple[str, ...]] = ()
    """Modules the local sandbox needs from this process's Python (``host_python``)."""
    extra: ClassVar[str | None] = None
    """The taskgym extra that installs :attr:`requires` (``pip install 'taskgym[<extra>]'``)."""

    def __init__(
        self,
        tasks: TaskSet | str | Path | None = None,
        sandbox: str | Mapping[str, Any] | LocalConfig | DockerConfig | Backend = "local",
        max_steps: int | None = None,
        render_mode: str | None = None,
        timeout_sec: float | None = None,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode must be one of {self.metadata['render_modes']}")
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

    def sandbox_spec(self, task: Task) -> SandboxSpec:
        """Sandbox shape and limits for ``task``."""
        limits = self.limits(task)
        return SandboxSpec(memory_mb=limits.memory_mb, pids=limits.pids, cpus=limits.cpus,
                           disk_mb=limits.disk_mb,
                           command_timeout_sec=limits.command_timeout_sec,
                           image=self.container_image(task))

    def container_image(self, task: Task) -> str | None:
        """A task folder's own ``environment/`` (when it has a Dockerfile), else :attr:`image`."""
        own = task.path / "environment"
        return str(own) if (own / "Dockerfile").is_file() else self.image

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
        super().reset(seed=seed)
        self._end_session()
        if "task_id" in options:
            task = self.task_set.get(str(options["task_id"]))
        elif seed is not None:
            task = self.task_set.pick(seed)
        else:
            task = self.task_set.pick(int(self.np_random.integers(0, 2**31 - 1)))
        self.task = task
        self._session = self.backend.start(self.sandbox_spec(task), self.workspace_seed(task))
        self._steps = 0
        self.episode_limits = self.limits(task)  # the task's budgets with this env's overrides
        self._deadline = time.monotonic() + self.episode_limits.timeout_sec
        self._over = False
        self.last_reward = None
        text = task.instruction
        self._transcript = [f"# task {task.id}\n{text}"]
        info = {"task_id": task.id, "domain": self.domain, "tools": self._tool_specs, "step": 0}
        return {"text": text}, info

    def step(
        self, action: Any
    ) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        info: dict[str, Any] = {"task_id": self.task.id if self.task else None}
        if self._over:
            message = "the episode is over; call reset() to start a new one"
            info["error"] = message
            return {"text": f"error: {message}"}, 0.0, True, False, info
        self._steps += 1
        info["step"] = self._steps
        call = parse_action(action, self._tools_by_name)
        if isinstance(call, ActionError):
            result = ToolResult(text=f"error: {call.message}", error=call.message)
        else:
            info["tool"] = call.tool.name
            try:
                result = call.tool.run(call.args)
            except TaskgymError as exc:
                result = ToolResult(text=f"error: {exc}", error=str(exc))
            except OSError as exc:
                result = ToolResult(text=f"error: {exc.strerror or exc}", error=str(exc))
            except Exception as exc:  # a bug, not the agent's doing: end the episode, say why
                return self._crash(exc, f"the {call.tool.name} tool", action, info)
        if result.error is not None:
            info["error"] = _utf8(result.error)
        if result.info:
            info.update(result.info)
        if result.images:
            info["images"] = list(result.images)
        text = result.text
        terminated = result.done
        limits = self.episode_limits
        truncated = not terminated and (
            self._steps >= limits.max_steps or time.monotonic() >= self._deadline)
        reward = 0.0
        if terminated or truncated:
            if truncated:
                text += ("\n[step limit reached]" if self._steps >= limits.max_steps
                         else "\n[time limit reached]")
            try:
                graded = self._grade()
            except Exception as exc:  # the verifier or the sandbox's stop crashed
                return self._crash(exc, "grading", action, info)
            reward = graded.score
            info["reward"] = graded
            info["usage"] = {"cpu_sec": self.last_usage.cpu_sec,
                             "peak_memory_bytes": self.last_usage.peak_memory_bytes}
            text += f"\n[graded: {graded.summary()}]"
        text = _utf8(text)
        if self.render_mode == "ansi":
            self._transcript.append(f"$ {_describe(action)}\n{text}")
        return {"text": text}, reward, terminated, truncated, info

    def _crash(self, exc: Exception, where: str, action: Any, info: dict[str, Any]
               ) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """End the episode after an unexpected exception in ``where``, ungraded."""
        self._over = True
        crash = {"type": type(exc).__name__, "message": _utf8(str(exc))[:2000], "where": where,
                 "traceback": _utf8("".join(traceback.format_exception(exc)))}
        try:
            self._end_session()
        except Exception as cleanup:  # the crash itself may have broken the sandbox
            crash["cleanup"] = _utf8(f"{type(cleanup).__name__}: {cleanup}")[:2000]
        message = (f"taskgym crashed in {where}: {crash['type']}: {crash['message']}. This is "
                   "a bug in taskgym or in the env, not the agent's doing; the episode is over, "
                   "ungraded (info['crash'] has the traceback; please report it)")
        info.update(error=message, crash=crash)
        text = f"error: {message}"
        if self.render_mode == "ansi":
            self._transcript.append(f"$ {_describe(action)}\n{text}")
        return {"text": text}, 0.0, False, True, info

    def _grade(self) -> RewardResult:
        assert self.task is not None
        session = self.session
        self._over = True
        try:
            session.stop()
            self.last_usage = session.usage()
            result = self.verify(self.task, session)
        except TaskgymError as exc:
            result = RewardResult.failed(f"grading failed: {exc}")
        finally:
            self._end_session()
        self.last_reward = result
        return result

    def _end_session(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.close()

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return "\n\n".join(self._transcript)
        return None

    def close(self) -> None:
        self._over = True
        self._end_session()
        if self._backend is not None:
            close_warm_graders(self._backend)
        super().close()


def _describe(action: Any) -> str:
    try:
        text = action if isinstance(action, str) else repr(action)
    except Exception as exc:  # an odd object's __repr__
        text = f"<{type(action).__name__} whose repr raised {type(exc).__name__}>"
    return _utf8(text if len(text) < 400 else text[:400] + "...")


def _utf8(text: str) -> str:
    """``text`` with any lone surrogate written as an escape, so that it encodes as UTF-8."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
