"""Running episodes and evaluations (what ``taskgym run`` and ``taskgym eval`` do).

An episode the environment failed (no verdict: the grader could not run, a sandbox did not
start, taskgym crashed) is counted apart from the graded ones: success rate, mean score and
step success rate are over graded episodes only, and the no-verdict rate with its classes
(:class:`~taskgym.core.reward.FailureClass`) stands beside them.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import gymnasium as gym

from taskgym.agents import Agent, make_agent
from taskgym.core.registry import make
from taskgym.core.reward import FailureClass, RewardResult
from taskgym.errors import ConfigError, MissingDependencyError, SandboxError

__all__ = ["EpisodeRecord", "EvalResults", "evaluate", "failure_of", "run_episode"]


@dataclass
class EpisodeRecord:
    """Everything measured about one episode (one JSONL line)."""

    env_id: str
    task_id: str
    seed: int | None
    agent: str
    score: float
    success: bool
    steps: int
    step_errors: int
    wall_sec: float
    cpu_sec: float
    peak_memory_bytes: int
    components: dict[str, float] = field(default_factory=dict)
    reason: str | None = None
    error: str | None = None
    """Set when the episode crashed (an infrastructure failure, not the agent's score)."""
    traceback: str | None = None
    """The crash's traceback, when ``error`` is set."""
    verdict: str = "graded"
    """``"graded"`` when the verifier judged the episode, ``"none"`` when the environment
    failed (a no-verdict result, a crash, a reset that raised): its score is not the agent's."""
    failure: str | None = None
    """The :class:`~taskgym.core.reward.FailureClass` value of a no-verdict episode."""

    @property
    def graded(self) -> bool:
        return self.verdict == "graded"


@dataclass
class EvalResults:
    """All episode records and their summary."""

    env_id: str
    agent: str
    records: list[EpisodeRecord]

    def summary(self) -> dict[str, float]:
        """Rates over the graded episodes (success, mean score, steps, step success), the
        share of episodes with no verdict, and the costs of every episode."""
        recs = self.records
        graded = [r for r in recs if r.graded]
        n, g = len(recs), len(graded)
        steps = sum(r.steps for r in graded)
        return {
            "episodes": float(n),
            "graded": float(g),
            "success_rate": sum(r.success for r in graded) / g if g else 0.0,
            "mean_score": statistics.fmean(r.score for r in graded) if g else 0.0,
            "mean_steps": steps / g if g else 0.0,
            "step_success_rate": (steps - sum(r.step_errors for r in graded)) / steps
            if steps else 0.0,
            "no_verdict_rate": (n - g) / n if n else 0.0,
            "wall_sec": sum(r.wall_sec for r in recs),
            "cpu_sec": sum(r.cpu_sec for r in recs),
            "peak_memory_mb": max((r.peak_memory_bytes for r in recs), default=0) / 2**20,
            "crashed": float(sum(r.error is not None for r in recs)),
        }

    def no_verdict_classes(self) -> dict[str, int]:
        """How many episodes had no verdict, by failure class (most frequent first)."""
        counts: dict[str, int] = {}
        for r in self.records:
            if not r.graded:
                key = r.failure or FailureClass.TASKGYM_CRASH.value
                counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

    def table(self) -> str:
        """The summary as an aligned two-column table, each no-verdict class on its own row
        under the no-verdict rate."""
        labels = {
            "episodes": "episodes", "graded": "graded episodes",
            "success_rate": "success rate (graded)", "mean_score": "mean score (graded)",
            "mean_steps": "mean steps (graded)",
            "step_success_rate": "step success rate (graded)",
            "no_verdict_rate": "no-verdict rate",
            "wall_sec": "wall time (s, summed)", "cpu_sec": "CPU time (s, sandboxes)",
            "peak_memory_mb": "peak memory (MB)", "crashed": "crashed episodes",
        }
        counts = ("episodes", "graded", "crashed")
        rows = []
        for key, value in self.summary().items():
            rows.append((labels[key], f"{value:.0f}" if key in counts else f"{value:.3f}"))
            if key == "no_verdict_rate":
                rows += [(f"  {name}", str(count))
                         for name, count in self.no_verdict_classes().items()]
        width = max(len(a) for a, _ in rows)
        head = f"{self.env_id} / agent={self.agent}"
        return "\n".join([head, "-" * max(len(head), width + 12)]
                         + [f"{a:<{width}}  {b:>10}" for a, b in rows])


def run_episode(env: gym.Env[Any, Any], agent: Agent, seed: int | None = None,
                task_id: str | None = None,
                on_step: Callable[[Any, dict[str, str], dict[str, Any]], None] | None = None,
                ) -> EpisodeRecord:
    """Play one episode to the end and measure it."""
    started = time.monotonic()
    options = {"task_id": task_id} if task_id else None
    obs, info = env.reset(seed=seed, options=options)
    spec_id = env.spec.id if env.spec else type(env.unwrapped).__name__
    record = EpisodeRecord(env_id=spec_id.split("/", 1)[-1], task_id=info["task_id"], seed=seed,
                           agent=getattr(agent, "name", "agent"), score=0.0, success=False,
                           steps=0, step_errors=0, wall_sec=0.0, cpu_sec=0.0,
                           peak_memory_bytes=0)
    while True:
        action = agent.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        record.steps += 1
        record.step_errors += "error" in info
        if on_step is not None:
            on_step(action, obs, info)
        if terminated or truncated:
            break
    crash = info.get("crash")
    if crash is not None:  # step() ended the episode ungraded (see TaskEnv.step)
        record.error = f"{crash['type']} in {crash['where']}: {crash['message']}"
        record.traceback = crash["traceback"]
        record.verdict, record.failure = "none", FailureClass.TASKGYM_CRASH.value
    result = info.get("reward")
    if isinstance(result, RewardResult):
        if not result.graded:
            record.verdict, record.failure = "none", str(result.failure)
        record.score = result.score
        record.success = result.success
        record.components = dict(result.components)
        record.reason = result.details.get("reason")
        record.cpu_sec += float(result.details.get("verifier_cpu_seconds", 0.0))
    usage = info.get("usage", {})
    record.cpu_sec += usage.get("cpu_sec", 0.0)
    record.peak_memory_bytes = int(usage.get("peak_memory_bytes", 0))
    record.wall_sec = time.monotonic() - started
    return record


def failure_of(exc: BaseException) -> FailureClass:
    """The no-verdict class of an exception that ended an episode before it was graded (a
    reset's preflight refusing a missing grader dependency, a sandbox that did not start)."""
    if isinstance(exc, MissingDependencyError):
        return FailureClass.GRADER_DEPENDENCY
    if isinstance(exc, SandboxError):
        return FailureClass.SANDBOX_START
    if isinstance(exc, ConfigError):  # a task folder taskgym cannot read (its task.toml)
        return FailureClass.REFERENCE
    return FailureClass.TASKGYM_CRASH


def _open_output(output: str | Path) -> IO[str]:
    """``output`` opened for appending, or a ConfigError that says what to do."""
    path = Path(output)
    if not path.parent.is_dir():
        raise ConfigError(f"cannot write {path}: the folder {path.parent} does not exist; "
                          f"create it first (mkdir -p {path.parent}) or choose another file")
    try:
        return path.open("a")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}; choose another file")\
            from None


def evaluate(env_id: str, agent: str = "oracle", episodes: int | None = None, workers: int = 1,
             seeds: Iterable[int] | None = None, output: str | Path | None = None,
             progress: bool = True, agent_kwargs: dict[str, Any] | None = None,
             **env_kwargs: Any) -> EvalResults:
    """Run ``episodes`` episodes (seeds 0..n-1 by default) with ``workers`` threads.

    Each worker owns one env. Seeds pick tasks deterministically, so the default covers a
    curated set once. Every record is appended to ``output`` (JSONL) as soon as it ends.
    """
    if episodes is not None and episodes < 1:
        raise ConfigError(f"episodes={episodes}: give at least 1 (or None: every task once)")
    if workers < 1:
        raise ConfigError(f"workers={workers}: give at least 1")
    probe = make(env_id, **env_kwargs)
    try:
        make_agent(agent, probe, **(agent_kwargs or {}))  # a bad agent config fails here, once
        count = episodes if episodes is not None else len(probe.unwrapped.task_set)  # type: ignore[attr-defined]
    finally:
        probe.close()
    out = _open_output(output) if output else None  # before any episode runs
    seed_list = list(seeds) if seeds is not None else list(range(count))
    records: list[EpisodeRecord] = []
    lock = threading.Lock()
    local = threading.local()
    envs: list[gym.Env[Any, Any]] = []

    def one(seed: int) -> EpisodeRecord:
        try:
            if not hasattr(local, "env"):
                env = make(env_id, **env_kwargs)
                with lock:
                    envs.append(env)
                local.agent = make_agent(agent, env, **(agent_kwargs or {}))
                local.env = env
            return run_episode(local.env, local.agent, seed=seed)
        except Exception as exc:  # record the crash (no verdict), keep evaluating
            return EpisodeRecord(env_id=env_id, task_id="?", seed=seed, agent=agent, score=0.0,
                                 success=False, steps=0, step_errors=0, wall_sec=0.0,
                                 cpu_sec=0.0, peak_memory_bytes=0,
                                 error=f"{type(exc).__name__}: {exc}",
                                 traceback="".join(traceback.format_exception(exc)),
                                 verdict="none", failure=failure_of(exc).value)

    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=len(seed_list), desc=f"{env_id} [{agent}]", unit="ep")
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(one, s) for s in seed_list]
            for future in as_completed(futures):
                record = future.result()
                with lock:
                    records.append(record)
                    if out is not None:
                        out.write(json.dumps(asdict(record)) + "\n")
                        out.flush()
                    successes = sum(r.success for r in records)
                    graded = sum(r.graded for r in records)
                if bar is not None:  # the count first, so the bar never shows the previous one
                    bar.set_postfix(success=f"{successes}/{graded}",
                                    no_verdict=len(records) - graded, refresh=False)
                    bar.update(1)
    finally:
        if bar is not None:
            bar.close()
        if out is not None:
            out.close()
        for env in envs:
            env.close()
    records.sort(key=lambda r: (r.seed is None, r.seed))
    return EvalResults(env_id=env_id, agent=agent, records=records)
