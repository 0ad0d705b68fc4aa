"""``coding-terminal-v0``: solve a programming or ops task in a shell; hidden tests decide."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from taskgym.core.preflight import PYTEST, PYTHON3, GraderNeeds, own_image_fix
from taskgym.core.task_layouts import step_dir
from taskgym.core.workspace import task_workspace
from taskgym.domain import (
    Check,
    ConfigError,
    Requirement,
    RewardResult,
    SandboxSpec,
    Session,
    SubmitArgs,
    Task,
    TaskEnv,
    TaskgymError,
    Tool,
    ToolResult,
    program_check,
    shell_tools,
)
from taskgym.domains.coding.script_needs import cached_script_needs, refuse_unloaded_plugins
from taskgym.domains.coding.solutions import oracle_plan, solution_mount
from taskgym.domains.coding.task_steps import StepRun, prepare_step
from taskgym.domains.coding.verifier import grader_mode, verify_session

__all__ = ["GENERATORS", "CodingEnv"]

ENV_ID = "coding-terminal-v0"
GENERATORS = ("mutation", "spec", "wrangling")


class CodingEnv(TaskEnv):
    """A shell in a sandbox with the task's files in /app; ``submit`` runs the hidden tests.

    ``tasks`` may also be ``"curated"`` (the default), ``"generated"`` (every generator)
    or ``"generated:<name>"`` (one of :data:`GENERATORS`).
    """

    domain = "coding"
    image = f"taskgym/{ENV_ID}"
    description = "Solve a programming or ops task in a sandboxed shell; hidden tests decide."
    curated = f"{ENV_ID}/tasks"
    generators = GENERATORS
    generate = "taskgym.domains.coding.generators:generate"
    generated_size = 60
    _step_run: StepRun | None = None
    """Where the episode is in a multi-step task (``None`` for a task of one step)."""
    episode_attributes = ("_step_run",)

    def make_tools(self) -> list[Tool]:
        return [*shell_tools(lambda: self.session, self.command_timeout),
                self.submit_tool("Submit the workspace for grading by the hidden tests; ends the "
                                 "episode (or, in a task of several steps, starts the next step).",
                                 then=self._submitted)]

    def start_episode(self, task: Task) -> dict[str, Any] | None:
        """A multi-step task starts at its first step (its files copied in and its setup run;
        see :mod:`taskgym.domains.coding.task_steps`)."""
        self._step_run = None
        if not task.steps:
            return None
        self._step_run = StepRun(task)
        problem = prepare_step(task, self._step_run.name, self.session, self.command_timeout())
        if problem is not None:
            raise ConfigError(f"{task.path}: {problem}")
        return {"step_name": self._step_run.name}

    def _submitted(self, _args: SubmitArgs) -> ToolResult | None:
        run = self._step_run
        if run is None or run.last:
            return None  # "submitted": the episode ends and is graded
        assert self.task is not None
        try:
            result = verify_session(self.task, self.session, self.backend, step=run.name)
        except (TaskgymError, OSError) as exc:
            result = RewardResult.failed(f"grading step {run.name!r} failed: {exc}")
        run.results.append(result)
        graded = f"step {run.name!r} graded: {result.summary()}"
        run.ended = run.below_threshold(result)
        if run.ended is None:
            run.index += 1
            try:
                run.ended = prepare_step(self.task, run.name, self.session, self.command_timeout())
            except (TaskgymError, OSError) as exc:
                run.ended = f"step {run.name!r} could not be prepared: {exc}"
        if run.ended is not None:
            return ToolResult(f"{graded}\n[the task ends here: {run.ended}]", done=True)
        instruction = (step_dir(self.task.path, run.name) / "instruction.md").read_text()
        return ToolResult(f"{graded}\n\n# next step: {run.name}\n{instruction}",
                          info={"step_name": run.name, "step_reward": result.score})

    @classmethod
    def doctor_checks(cls, env_id: str) -> list[Check]:
        """The default setup's own needs (not optional): the grader's pytest and the tools
        tasks use, as the local sandbox sees them."""
        probe = ("import sys, pytest; sys.exit('pytest is an empty folder') if getattr(pytest, "
                 "'__file__', None) is None else print('pytest', pytest.__version__)")
        return [program_check(PYTEST.name, ["/usr/bin/python3", "-I", "-c", probe],
                              PYTEST.packages, optional=False),
                *(program_check(f"coding: {tool}", [tool, "--version"], package, optional=False)
                  for tool, package in (("git", "git"), ("make", "make"),
                                        ("gcc", "gcc libc6-dev")))]

    def workspace_seed(self, task: Task) -> Path | None:
        return task_workspace(task, self.backend, self.sandbox_spec(task), self.image)

    def grader_needs(self, task: Task) -> GraderNeeds:
        """python3 and pytest for taskgym's per-test run; python3 and what a static read of
        the test scripts finds (commands, pytest plugins: :mod:`.script_needs`) for Harbor's
        test.sh and Terminal-Bench 1's run-tests.sh; in the grader's view (the agent's image)."""
        image = self.container_image(task)
        requirements: tuple[Requirement, ...] = (PYTEST,)
        unknown: tuple[str, ...] = ()
        if grader_mode(task) != "pytest":
            scripts = [*(task.path / "tests").glob("test.sh"), *task.path.glob("run-tests.sh"),
                       *task.path.glob("steps/*/tests/test.sh")]
            requirements = (PYTHON3,)
            for script in sorted(scripts):
                found = cached_script_needs(script)
                requirements += tuple(r for r in found.requirements() if r not in requirements)
                if found.installs:
                    unknown = ("what the test scripts install as they run",)
                refuse_unloaded_plugins(task, script, found)
        return GraderNeeds(requirements, image=image, image_fix=own_image_fix(image, self.image),
                           unknown=unknown)

    def verify(self, task: Task, session: Session) -> RewardResult:
        run = self._step_run
        if run is None or run.task is not task:
            return verify_session(task, session, self.backend)
        if run.ended is None:  # the last step was submitted, or the episode ran out mid-step
            run.results.append(verify_session(task, session, self.backend, step=run.name))
        return run.total()

    def sandbox_spec(self, task: Task) -> SandboxSpec:
        """The base spec plus an empty writable folder where the oracle puts the reference
        solution (``/solution`` for Harbor folders, ``/oracle`` for Terminal-Bench 1), as
        those harnesses do; it stays empty unless the oracle plays."""
        spec = super().sandbox_spec(task)
        return spec.model_copy(update={"writable_dirs": (*spec.writable_dirs,
                                                         solution_mount(task))})

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        return oracle_plan(task, self.limits(task).command_timeout_sec,
                           {"tool": "submit", "args": {}})
