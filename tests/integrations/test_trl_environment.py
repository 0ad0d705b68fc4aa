"""The TRL environment object on its own (no trl needed, so these run in the main suite): the
methods TRL sees, the episode policy (graded, unsubmitted, no verdict, calls after the end),
a reset that fails without raising, the per-object guard, cleanup, pickling, and a reward
hack through the adapter."""

from __future__ import annotations

import gc
import inspect
import pickle
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from taskgym.errors import ConfigError, HostResourceError, SandboxError, TaskNotFoundError
from taskgym.integrations import env_of
from taskgym.integrations.trl import (
    AFTER_END,
    EnvironmentFactory,
    close_environments,
    environment_factories,
    environment_factory,
    outcome_of,
    taskgym_metrics,
)
from taskgym.sandbox import Backend

sys.path.insert(0, str(Path(__file__).parent))

from trainer_kit import PASS_EVERYTHING  # noqa: E402

pytestmark = [pytest.mark.sandbox]

HELLO = Path(__file__).parents[2] / "fixtures" / "coding" / "harbor-hello"


def trl_methods(obj: Any) -> set[str]:
    """What TRL 1.16 lists on an environment's class (grpo_trainer.py, async_rollout_worker.py)."""
    return {name for name, _ in inspect.getmembers(type(obj), predicate=inspect.isfunction)
            if not name.startswith("_")}


@pytest.fixture()
def hello() -> Any:
    made = environment_factory("coding-terminal-v0", tasks=str(HELLO))()
    yield made
    made._close()


def test_trl_sees_reset_get_reward_and_exactly_the_tools() -> None:
    for env_id in ("coding-terminal-v0", "finance-pdf-v0", "mesh-trimesh-v0"):
        obj = environment_factory(env_id)()
        tools = {t.name for t in env_of(obj).unwrapped.tools}
        assert trl_methods(obj) == {"reset", "get_reward"} | tools
        assert "close" not in trl_methods(obj)
        obj._close()


def test_the_factory_pickles_and_every_call_gives_one_class() -> None:
    factory = environment_factory("coding-terminal-v0", tasks=str(HELLO), max_steps=5)
    again = pickle.loads(pickle.dumps(factory))
    first, second = factory(), again()
    assert type(first) is type(second) and type(first).__name__ == "CodingTerminalV0"
    assert env_of(second).unwrapped.limits(env_of(second).unwrapped.task_set.pick(0)).max_steps == 5
    renamed = environment_factory("coding-terminal-v0", class_name="Terminal")()
    assert type(renamed).__name__ == "Terminal"
    for obj in (first, second, renamed):
        obj._close()
    with pytest.raises(ConfigError, match="on_no_verdict"):
        environment_factory("coding-terminal-v0", on_no_verdict="raise")
    with pytest.raises(ConfigError, match="unsubmitted"):
        environment_factory("coding-terminal-v0", unsubmitted=2.0)
    assert set(environment_factories(["coding-terminal-v0"])) == {"coding-terminal-v0"}


def test_a_graded_episode_gives_the_verifier_score_and_later_calls_run_nothing(hello: Any) -> None:
    assert "greeting.txt" in hello.reset(prompt=[{"role": "user", "content": ""}], extra=1)
    assert hello.bash(command="echo hello > /app/greeting.txt && cat /app/greeting.txt"
                      ).startswith("hello")
    assert "graded" in hello.submit()
    assert hello.bash(command="echo again") == AFTER_END
    assert hello.get_reward() == 1.0 == env_of(hello).unwrapped.last_reward.score
    outcome = outcome_of(hello)
    assert outcome is not None and outcome.end == "env" and outcome.verdict == "graded"


def test_an_unsubmitted_episode_scores_the_factorys_value_and_stops_its_sandbox(hello: Any) -> None:
    hello.reset()
    hello.bash(command="echo hello > /app/greeting.txt")  # right, but never submitted
    assert hello.get_reward() == 0.0
    assert env_of(hello).unwrapped.is_over and outcome_of(hello).end == "unsubmitted"
    assert hello.bash(command="ls") == AFTER_END
    dropped = environment_factory("coding-terminal-v0", tasks=str(HELLO), unsubmitted=None)()
    dropped.reset()
    assert dropped.get_reward() is None
    dropped._close()


def test_an_episode_with_no_verdict_gives_none(hello: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def crash(*_: Any) -> Any:
        raise RuntimeError("the grader's own bug")

    hello.reset()
    monkeypatch.setattr(env_of(hello).unwrapped, "verify", crash)
    assert "no verdict" in hello.submit()
    assert hello.get_reward() is None
    assert outcome_of(hello).end == "no_verdict" and outcome_of(hello).failure == "taskgym_crash"


def test_a_reset_that_fails_answers_with_text_and_the_object_stays_usable(
        hello: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_sandbox(*_: Any) -> Any:
        raise SandboxError("bubblewrap could not start")

    with monkeypatch.context() as patch:
        patch.setattr(env_of(hello).unwrapped, "workspace_seed", no_sandbox)
        text = hello.reset()
    assert "could not start" in text and "bubblewrap could not start" in text
    assert hello.bash(command="ls") == AFTER_END
    assert hello.get_reward() is None and outcome_of(hello).end == "reset_failed"
    assert outcome_of(hello).failure == "sandbox_start"

    def out_of_descriptors(*_: Any) -> Any:
        raise HostResourceError("too many open files")

    with monkeypatch.context() as patch:
        patch.setattr(env_of(hello).unwrapped, "workspace_seed", out_of_descriptors)
        assert "too many open files" in hello.reset()
    assert hello.get_reward() is None and outcome_of(hello).failure == "host_resources"
    assert "greeting.txt" in hello.reset()  # the next one starts as usual
    with pytest.raises(TaskNotFoundError):  # the dataset's mistake is the user's to see
        hello.reset(task_id="no-such-task")


def test_a_reward_asked_for_while_a_tool_runs_waits_for_it(hello: Any) -> None:
    # without the object's lock, get_reward would stop the sandbox under the running command
    hello.reset()
    replies: list[str] = []
    started = threading.Event()

    def call() -> None:
        started.set()
        replies.append(hello.bash(command="sleep 0.5; echo finished"))

    thread = threading.Thread(target=call)
    thread.start()
    started.wait()
    time.sleep(0.1)
    assert hello.get_reward() == 0.0
    thread.join()
    assert replies[0].split() == ["finished", "[exit", "code", "0]"], replies
    assert outcome_of(hello).end == "unsubmitted"


def test_close_environments_and_the_finalizer_stop_the_sandboxes() -> None:
    factory = environment_factory("coding-terminal-v0", tasks=str(HELLO))
    kept, dropped = factory(), factory()
    kept.reset()
    dropped.reset()
    dropped_env = env_of(dropped).unwrapped
    del dropped
    gc.collect()
    assert dropped_env.is_over  # the finalizer closed it

    class Trainer:  # what GRPOTrainer keeps: a pool per env name
        _environment_pool = {None: [kept]}
        environments = [kept]

    assert close_environments(Trainer()) == 1
    assert env_of(kept).unwrapped.is_over
    assert "greeting.txt" in kept.reset()  # still usable: a reset starts anew
    assert not env_of(kept).unwrapped.is_over
    assert close_environments() >= 1  # every one the factories made here
    assert env_of(kept).unwrapped.is_over


def test_taskgym_metrics_logs_components_and_ends(hello: Any) -> None:
    hello.reset()
    hello.bash(command="echo hello > /app/greeting.txt")
    hello.submit()
    logged: dict[str, float] = {}
    extra: dict[str, list[str]] = {}
    out = taskgym_metrics(["p"], environments=[hello], log_metric=logged.__setitem__,
                          log_extra=extra.__setitem__)
    assert out == [None]
    assert logged["taskgym/reward"] == 1.0 and logged["taskgym/end_env"] == 1.0
    assert logged["taskgym/end_unsubmitted"] == 0.0 and extra == {"taskgym_end": ["env"]}


@pytest.mark.hacks
def test_a_planted_reward_file_through_the_adapter_scores_zero(backend: Backend) -> None:
    obj = EnvironmentFactory("coding-terminal-v0", tasks=str(HELLO), sandbox=backend)()
    try:
        obj.reset()
        obj.bash(command="mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt; "
                         "echo 1 > /app/reward.txt")
        obj.write_file(path="/logs/verifier/reward.json", content='{"reward": 1}')
        obj.submit()
        assert obj.get_reward() == 0.0
        assert outcome_of(obj).verdict == "graded"
    finally:
        obj._close()


@pytest.mark.hacks
def test_a_planted_conftest_through_the_adapter_scores_zero(
        backend: Backend, answer_task: Any, tmp_path: Path) -> None:
    obj = EnvironmentFactory("coding-terminal-v0", tasks=str(answer_task(tmp_path / "t")),
                             sandbox=backend)()
    try:
        obj.reset()
        for path in ("/app/conftest.py", "/app/tests/conftest.py"):
            obj.write_file(path=path, content=PASS_EVERYTHING)
        obj.bash(command="echo 41 > /app/answer.txt; printf '[pytest]\\n' > /app/pytest.ini")
        obj.submit()
        assert obj.get_reward() == 0.0 and outcome_of(obj).verdict == "graded"
    finally:
        obj._close()
