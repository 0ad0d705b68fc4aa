"""Env registry, gymnasium integration and the error hierarchy."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import gymnasium
import pytest
from pydantic import BaseModel, ConfigDict

import taskgym
from taskgym.core import registry
from taskgym.core.env import TaskEnv
from taskgym.core.reward import RewardResult
from taskgym.core.task import FolderTaskSet, Task, TaskSet
from taskgym.core.tool import Tool, ToolResult
from taskgym.domains.coding import CodingEnv
from taskgym.errors import (
    ConfigError,
    MissingDependencyError,
    NoVerdictError,
    SandboxError,
    SandboxFileError,
    SandboxPathError,
    SandboxUnavailableError,
    TaskgymError,
    TaskNotFoundError,
    UnknownEnvError,
    VerifierError,
)
from taskgym.sandbox import Backend, ExecResult, ResourceUsage, SandboxSpec, Session

# -- a tiny env with an in-memory sandbox --------------------------------------------------


class MemorySession(Session):
    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        self.files: dict[str, bytes] = {}
        self.closed = False
        self.stopped = False

    def exec(self, command: str, timeout: float | None = None) -> ExecResult:
        return ExecResult(stdout=command, stderr="", exit_code=0, duration_sec=0.0)

    def read_file(self, path: str, limit: int | None = None) -> bytes:
        return self.files[path]

    def write_file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self.files[path] = data

    def export_workspace(self, dest: Path) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        self.stopped = True

    def usage(self) -> ResourceUsage:
        return ResourceUsage(cpu_sec=0.5, peak_memory_bytes=1024)

    def close(self) -> None:
        self.closed = True

    @property
    def alive(self) -> bool:
        return not self.stopped


class MemoryBackend(Backend):
    name = "memory"

    def __init__(self) -> None:
        self.sessions: list[MemorySession] = []

    @classmethod
    def check(cls) -> str | None:
        return None

    def start(self, spec: SandboxSpec, seed: Path | None = None) -> Session:
        self.sessions.append(MemorySession(spec))
        return self.sessions[-1]

    def run(self, spec: SandboxSpec, argv: list[str], seed: Path | None = None,
            timeout: float | None = None, pass_fds: Sequence[int] = ()) -> Any:
        raise NotImplementedError


class SayArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    word: str


class TinyEnv(TaskEnv):
    """Say the magic word, then submit."""

    domain = "tiny"
    description = "say the word"

    def __init__(self, *args: Any, greeting: str = "hello", **kwargs: Any) -> None:
        self.greeting = greeting
        super().__init__(*args, **kwargs)

    def default_tasks(self) -> TaskSet:
        raise ConfigError("TinyEnv needs tasks=")

    def make_tools(self) -> list[Tool]:
        def say(args: SayArgs) -> ToolResult:
            self.session.write_file("said", args.word.encode())
            return ToolResult(f"{self.greeting}, you said {args.word}")

        return [Tool("say", "Say a word.", SayArgs, say),
                Tool("submit", "Done.", type("NoArgs", (BaseModel,), {}),
                     lambda a: ToolResult("submitted", done=True))]

    def verify(self, task: Task, session: Session) -> RewardResult:
        said = session.files.get("said", b"").decode()  # type: ignore[attr-defined]
        ok = said == task.config.get("word")
        return RewardResult(score=1.0 if ok else 0.0, success=ok)

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        return [{"tool": "say", "args": {"word": task.config["word"]}},
                {"tool": "submit", "args": {}}]


TINY_ID = "tiny-registry-test-v0"


@pytest.fixture()
def tiny_registered() -> Iterator[str]:
    registry.register(TINY_ID, f"{__name__}:TinyEnv", "A tiny test env.", greeting="ahoy")
    try:
        yield TINY_ID
    finally:
        registry._REGISTRY.pop(TINY_ID, None)
        gymnasium.registry.pop(f"taskgym/{TINY_ID}", None)


@pytest.fixture()
def tiny_tasks(tmp_path) -> Path:
    for name, word in (("t-apple", "apple"), ("t-pear", "pear")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "instruction.md").write_text(f"Say {word}.\n")
        (tmp_path / name / "task.toml").write_text(f'word = "{word}"\n[agent]\nmax_steps = 3\n')
    return tmp_path


# -- list and make ---------------------------------------------------------------------------


def test_list_envs_has_coding():
    envs = taskgym.list_envs()
    assert "coding-terminal-v0" in envs
    assert envs["coding-terminal-v0"] == (
        "Solve a programming or ops task in a sandboxed shell; hidden tests decide.")
    assert list(envs) == sorted(envs)


@pytest.mark.parametrize(("wrong", "near"), [("coding-terminal-v1", "coding-terminal-v0"),
                                             ("taskgym/codng-terminal-v0", "coding-terminal-v0"),
                                             ("coding-termnal", "coding-terminal-v0")])
def test_make_unknown_suggests_nearest(wrong, near):
    with pytest.raises(UnknownEnvError) as info:
        taskgym.make(wrong)
    assert str(info.value).startswith(f"no taskgym env {wrong!r}. Did you mean {near!r}? ")
    assert "Registered: " in str(info.value) and "coding-terminal-v0" in str(info.value)


def test_make_unknown_without_near_match():
    with pytest.raises(UnknownEnvError) as info:
        taskgym.make("zzz")
    assert "Did you mean" not in str(info.value)
    assert str(info.value).startswith("no taskgym env 'zzz'. Registered: ")


@pytest.mark.parametrize("env_id", ["coding-terminal-v0", "taskgym/coding-terminal-v0"])
def test_make_resolves_both_spellings(env_id):
    env = taskgym.make(env_id, max_steps=4)
    try:
        assert isinstance(env.unwrapped, CodingEnv)
        assert env.spec is not None and env.spec.id == "taskgym/coding-terminal-v0"
        assert env.unwrapped._session is None  # no sandbox started by creation
        assert env.unwrapped.limits(env.unwrapped.task_set.pick(0)).max_steps == 4
        assert repr(env.action_space) == "ToolCallSpace(bash, read_file, write_file, submit)"
        assert isinstance(env.unwrapped.task_set, FolderTaskSet)
    finally:
        env.close()


def test_gymnasium_make_after_import():
    env = gymnasium.make("taskgym/coding-terminal-v0")
    try:
        assert isinstance(env.unwrapped, CodingEnv)
        assert "taskgym/coding-terminal-v0" in gymnasium.registry
    finally:
        env.close()


def test_make_passes_kwargs_to_the_env(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        taskgym.make("coding-terminal-v0", tasks=str(tmp_path / "missing"))


# -- register --------------------------------------------------------------------------------


def test_register_custom_env(tiny_registered, tiny_tasks):
    assert taskgym.list_envs()[tiny_registered] == "A tiny test env."
    backend = MemoryBackend()
    env = taskgym.make(tiny_registered, tasks=str(tiny_tasks), sandbox=backend)
    try:
        base = env.unwrapped
        assert isinstance(base, TinyEnv)
        assert base.greeting == "ahoy"  # register() kwargs reach the env
        assert base.task_set.ids() == ["t-apple", "t-pear"]
        obs, info = env.reset(seed=1)
        assert obs == {"text": "Say pear.\n"}
        assert info["task_id"] == "t-pear" and info["step"] == 0 and info["domain"] == "tiny"
        assert [t["function"]["name"] for t in info["tools"]] == ["say", "submit"]
        say_pear = {"tool": "say", "args": {"word": "pear"}}
        obs, reward, terminated, truncated, info = env.step(say_pear)
        assert obs["text"] == "ahoy, you said pear"
        assert (reward, terminated, truncated) == (0.0, False, False)
        obs, reward, terminated, truncated, info = env.step({"tool": "submit", "args": {}})
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["reward"].success is True
        assert backend.sessions[0].stopped and backend.sessions[0].closed
    finally:
        env.close()


def test_register_custom_env_gymnasium_make(tiny_registered, tiny_tasks):
    env = gymnasium.make(f"taskgym/{tiny_registered}", tasks=str(tiny_tasks),
                         sandbox=MemoryBackend(), greeting="yo")
    try:
        assert env.unwrapped.greeting == "yo"
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.step({"tool": "say", "args": {"word": "x"}})
        assert obs["text"] == "yo, you said x"
        obs, reward, terminated, truncated, info = env.step({"tool": "say", "args": {"word": "y"}})
        obs, reward, terminated, truncated, info = env.step({"tool": "say", "args": {"word": "z"}})
        assert (reward, terminated, truncated) == (0.0, False, True)  # max_steps = 3
        assert "[step limit reached]" in obs["text"]
    finally:
        env.close()


def test_unregistered_after_cleanup():
    assert TINY_ID not in taskgym.list_envs()
    with pytest.raises(UnknownEnvError):
        taskgym.make(TINY_ID)


# -- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("error", "bases"), [
    (ConfigError, (TaskgymError, ValueError)),
    (UnknownEnvError, (ConfigError, KeyError, TaskgymError, ValueError)),
    (TaskNotFoundError, (ConfigError, KeyError, TaskgymError, ValueError)),
    (MissingDependencyError, (TaskgymError, ImportError)),
    (SandboxError, (TaskgymError, RuntimeError)),
    (SandboxUnavailableError, (SandboxError, TaskgymError, RuntimeError)),
    (SandboxPathError, (SandboxError, ConfigError, ValueError, TaskgymError)),
    (SandboxFileError, (SandboxError, OSError, TaskgymError)),
    (VerifierError, (TaskgymError, RuntimeError)),
    (NoVerdictError, (VerifierError, TaskgymError, RuntimeError)),
])
def test_error_hierarchy(error, bases):
    for base in bases:
        assert issubclass(error, base), (error, base)
    assert issubclass(error, Exception)


@pytest.mark.parametrize("error", [ConfigError, SandboxError, VerifierError,
                                   MissingDependencyError, SandboxUnavailableError])
def test_errors_not_in_other_branches(error):
    assert not issubclass(error, KeyError)
    assert not issubclass(error, TimeoutError)


def test_key_errors_do_not_quote_their_message():
    assert str(UnknownEnvError("no env 'x'")) == "no env 'x'"
    assert str(TaskNotFoundError("no task 'y'")) == "no task 'y'"
    assert str(KeyError("no env 'x'")) == "\"no env 'x'\""
    assert str(UnknownEnvError()) == ""


def test_errors_are_exported():
    for name in ("ConfigError", "UnknownEnvError", "TaskNotFoundError", "TaskgymError",
                 "VerifierError", "NoVerdictError"):
        assert getattr(taskgym, name) is getattr(taskgym.errors, name)
    assert not hasattr(taskgym, "SandboxTimeout")  # never raised: gone from the API (0.1)


# -- clear errors at make and reset (no sandbox starts) ---------------------------------------


@pytest.mark.parametrize("wrong", ["nope-v0", "cad-v0", "taskgym/pdf-v1"])
def test_make_unknown_far_from_every_id_lists_them(wrong):
    # a shared "-v0" is no reason to suggest an id: only close matches are suggested
    with pytest.raises(UnknownEnvError) as info:
        taskgym.make(wrong)
    assert str(info.value) == (f"no taskgym env {wrong!r}. Registered: "
                               + ", ".join(sorted(taskgym.list_envs())))


@pytest.mark.parametrize("name", ["nope", "Local", "", "bwrap"])
def test_make_refuses_an_unknown_sandbox_name(name):
    with pytest.raises(ConfigError) as info:
        taskgym.make("coding-terminal-v0", sandbox=name)
    assert str(info.value).startswith(f"no sandbox backend named {name!r} is installed "
                                      "(installed: 'docker', 'local', 'unisolated').")


def test_make_refuses_a_sandbox_of_the_wrong_type():
    with pytest.raises(ConfigError, match=r"^sandbox must be a backend name \(docker, local, unisolated\), "
                                          r"a config or a Backend, not int$"):
        taskgym.make("coding-terminal-v0", sandbox=3)


@pytest.mark.parametrize(("tasks", "hint"), [("curatd", " Did you mean 'curated'?"),
                                             ("generatd", " Did you mean 'generated'?"),
                                             ("no/such/folder", "")])
def test_make_unknown_task_set_names_the_named_ones(tasks, hint, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        taskgym.make("coding-terminal-v0", tasks=tasks)
    assert str(info.value) == (
        f"tasks={tasks!r}: not a named task set, and the folder {tmp_path / tasks} does not "
        f"exist.{hint} Named sets of coding: curated, generated, generated:mutation, "
        "generated:spec, generated:wrangling")


def test_task_set_names_without_generators(tiny_registered, tiny_tasks):
    env = taskgym.make(tiny_registered, tasks=str(tiny_tasks), sandbox=MemoryBackend())
    assert env.unwrapped.task_set_names() == ["curated"]  # type: ignore[attr-defined]
    env.close()


@pytest.mark.parametrize("options", [{"taskid": "x"}, {"task_id": "calc", "seed": 1},
                                     {"task": "a", "reset_mask": [True]}])
def test_reset_refuses_unknown_options(options):
    env = taskgym.make("coding-terminal-v0")
    try:
        with pytest.raises(ConfigError) as info:
            env.reset(options=options)
    finally:
        env.close()
    unknown = ", ".join(repr(k) for k in sorted(options) if k != "task_id")
    assert str(info.value) == f"unknown reset option(s) {unknown}; known: 'task_id', 'replay'"
