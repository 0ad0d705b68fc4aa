"""Multi-step Harbor tasks (``[[steps]]`` in task.toml), played as Harbor plays them.

One episode, one sandbox: the agent gets the first step's instruction at reset; each
``submit`` grades the current step (its tests: tests/ with steps/<name>/tests/ over it) and,
unless it was the last, answers with the next step's instruction. Before a step starts, the
files of ``steps/<name>/workdir/`` are copied into the workspace and its ``setup.sh`` (one
of them) runs there. A step whose reward is below its ``min_reward`` ends the episode.

The episode's score follows ``multi_step_reward_strategy``: ``"mean"`` (the default) is the
mean over every step of the task, ``"final"`` the last step's. Unlike Harbor, which leaves
steps it never ran out of the mean and takes the last step that ran for ``"final"``, a step
the episode never reached (it ended early, by min_reward or by the step or time limit)
scores 0 here: otherwise ending early after a good first step would pay.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from taskgym.core.reward import RewardResult
from taskgym.core.task import Task
from taskgym.core.task_layouts import TERMINAL_BENCH_1, step_dir
from taskgym.sandbox import Session

__all__ = ["StepRun", "copy_tests", "prepare_step"]


@dataclass
class StepRun:
    """Where a multi-step episode is: the step being played and the grades so far."""

    task: Task
    index: int = 0
    results: list[RewardResult] = field(default_factory=list)
    ended: str | None = None
    """Why the episode ended before its last step (``None`` while it goes on)."""

    @property
    def name(self) -> str:
        return self.task.steps[self.index]

    @property
    def last(self) -> bool:
        return self.index == len(self.task.steps) - 1

    def below_threshold(self, result: RewardResult) -> str | None:
        """How the current step's ``result`` misses its ``min_reward``, or ``None``."""
        config = _step_config(self.task, self.index)
        threshold = config.get("min_reward")
        if threshold is None:
            return None
        wanted = threshold if isinstance(threshold, dict) else {"reward": threshold}
        got = {**result.components, "reward": result.score}
        for key, minimum in wanted.items():
            value = got.get(key)
            if value is None or value < minimum:
                return f"step {self.name!r}: {key} = {value} is below its min_reward {minimum}"
        return None

    def total(self) -> RewardResult:
        """The episode's reward from its steps' (see the module docstring)."""
        steps = self.task.steps
        scores = [r.score for r in self.results] + [0.0] * (len(steps) - len(self.results))
        strategy = self.task.config.get("multi_step_reward_strategy") or "mean"
        score = scores[-1] if strategy == "final" else sum(scores) / len(scores)
        components = {f"step_{name}": value for name, value in zip(steps, scores, strict=True)}
        components["steps_graded"] = float(len(self.results))
        details: dict[str, Any] = {"strategy": strategy, "steps": [
            {"name": name, **r.details, "score": r.score} for name, r in zip(steps, self.results,
                                                                              strict=False)]}
        if self.ended is not None:
            details["reason"] = self.ended
        return RewardResult(score=score, success=score >= 1.0, components=components,
                            details=details)


def prepare_step(task: Task, name: str, session: Session, timeout: float) -> str | None:
    """Copy steps/<name>/workdir/ into the workspace and run its setup.sh; the error, if any."""
    workdir = step_dir(task.path, name) / "workdir"
    if not workdir.is_dir():
        return None
    for path in sorted(workdir.rglob("*")):
        if path.is_file() and not path.is_symlink():
            session.write_file(str(path.relative_to(workdir)), path.read_bytes(),
                               path.stat().st_mode & 0o777)
    if not (workdir / "setup.sh").is_file():
        return None
    # apart from the agent's shell: its functions (a `bash` of its own), traps and background
    # processes could otherwise skip the setup or fake its outcome
    result = session.exec_apart(f"bash {session.spec.workdir}/setup.sh", timeout=timeout)
    if result.exit_code != 0:
        return (f"step {name!r}: setup.sh exited with code {result.exit_code}: "
                f"{(result.stderr or result.stdout)[-1000:]}")
    return None


def copy_tests(task: Task, dest: Path, step: str | None = None) -> Path:
    """``task``'s hidden tests as its harness lays them out for a grader, copied to ``dest``:
    ``tests/`` (with Terminal-Bench 1's ``run-tests.sh``), and for ``step`` of a multi-step
    task ``steps/<step>/tests/`` copied over it, as in Harbor."""
    if (task.path / "tests").is_dir():
        shutil.copytree(task.path / "tests", dest, symlinks=True)
    else:
        dest.mkdir()
    if task.layout == TERMINAL_BENCH_1:
        shutil.copy2(task.path / "run-tests.sh", dest / "run-tests.sh")
    if step is not None and (step_dir(task.path, step) / "tests").is_dir():
        shutil.copytree(step_dir(task.path, step) / "tests", dest, symlinks=True,
                        dirs_exist_ok=True)
    return dest


def _step_config(task: Task, index: int) -> dict[str, Any]:
    steps = task.config.get("steps") or []
    config = steps[index] if index < len(steps) else {}
    return config if isinstance(config, dict) else {}
