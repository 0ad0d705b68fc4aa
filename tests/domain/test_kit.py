"""The domain kit (``taskgym.domain``): its public names, and each piece it promises."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

import taskgym
import taskgym.domain as kit
from taskgym.core import registry
from taskgym.core.task import load_task
from taskgym.domain import (
    ConfigError,
    Limits,
    RewardResult,
    Session,
    Task,
    TaskEnv,
    Tool,
    ToolArgs,
    ToolResult,
    VerifierSettings,
    grader_spec,
    shell_tools,
    task_toml,
    write_task_folder,
)
from taskgym.errors import MissingDependencyError

ROOT = Path(__file__).resolve().parents[2]


def test_every_name_of_the_kit_resolves_and_is_documented() -> None:
    assert len(set(kit.__all__)) == len(kit.__all__)
    page = (ROOT / "docs" / "add-a-domain.md").read_text()
    table = page.split("## The kit", 1)[1]
    documented = set(re.findall(r"^\| ((?:`\w+`(?:, )?)+) \|", table, re.MULTILINE))
    names = {n.strip("`") for row in documented for n in row.split(", ")}
    for name in kit.__all__:
        assert getattr(kit, name) is not None
    assert names == set(kit.__all__)


# -- Limits -> spec, in one place, cpus included ----------------------------------------------
def _task(tmp_path: Path, **limits: Any) -> Task:
    write_task_folder(tmp_path / "t", "Do it.\n", task_toml(limits=limits),
                      {"tests/test_x.py": "def test_x():\n    pass\n",
                       "solution/solve.sh": "true\n"})
    return load_task(tmp_path / "t", "coding")


def test_cpus_reach_the_agents_and_every_graders_spec(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    task = _task(tmp_path, cpus=2.5, memory_mb=700, pids=99)
    assert task.limits.sandbox_spec().cpus == 2.5
    env = taskgym.make("coding-terminal-v0", tasks=str(task.path)).unwrapped
    try:
        assert env.sandbox_spec(task).cpus == 2.5
    finally:
        env.close()
    shared = grader_spec(task, {})
    assert (shared.cpus, shared.memory_mb, shared.pids) == (2.5, 700, 99)
    coding = importlib.import_module("taskgym.domains.coding.verifier")
    seen = []

    def capture(backend: Any, spec: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(spec)
        raise LookupError("captured")

    monkeypatch.setattr(coding, "run_grader", capture)
    with pytest.raises(LookupError):
        coding.grade_workspace(task, tmp_path, backend=None)  # type: ignore[arg-type]
    assert seen[0].cpus == 2.5


# -- the task-folder writer --------------------------------------------------------------------
def test_the_writer_round_trips_budgets_metadata_and_tables(tmp_path: Path) -> None:
    limits = {"max_steps": 7, "timeout_sec": 99.5, "command_timeout_sec": 30, "memory_mb": 1500,
              "pids": 77, "disk_mb": 300, "cpus": 1.5, "verifier_timeout_sec": 45}
    config = task_toml(difficulty="hard", category="c", tags=("a", "b"), limits=limits,
                       tables={"version": "1.0", "verifier": {"expected_tests": 3},
                               "mine": {"x": [1, 2], "nested": {"y": "z"}}})
    write_task_folder(tmp_path / "t", "Say hi.\n", config, {"tests/data.bin": b"\0\1",
                                                           "solution/solve.sh": "echo hi\n"})
    task = load_task(tmp_path / "t", "d")
    assert task.limits == Limits(**limits)
    assert (task.difficulty, task.category, task.tags) == ("hard", "c", ("a", "b"))
    assert task.instruction == "Say hi.\n"
    assert task.config["mine"] == {"x": [1, 2], "nested": {"y": "z"}}
    assert VerifierSettings.of(task).expected_tests == 3
    assert (task.path / "tests" / "data.bin").read_bytes() == b"\0\1"


def test_the_writer_refuses_what_would_not_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="max_steps"):
        task_toml(limits={"max_steps": 0})
    with pytest.raises(ConfigError, match=r"\[verifier\] timeout_sec: given as a limit and in"):
        task_toml(limits={"verifier_timeout_sec": 5}, tables={"verifier": {"timeout_sec": 9,
                                                                          "expected_tests": 1}})
    with pytest.raises(ConfigError):
        write_task_folder(tmp_path / "t", "x", {"mine": {"none": None}})
    with pytest.raises(ConfigError, match="inside the task folder"):
        write_task_folder(tmp_path / "t", "x", task_toml(), {"../escape.txt": "x"})
    assert not (tmp_path / "escape.txt").exists()


GENERATORS = {
    "coding": ("taskgym.domains.coding.generators", ("mutation", "spec", "wrangling")),
    "cad": ("taskgym.domains.cad.generators", None),
    "mesh": ("taskgym.domains.mesh.generators", None),
    "finance": ("taskgym.domains.finance.generators", None),
    "game": ("taskgym.domains.game.generators", None),
}


@pytest.mark.slow
@pytest.mark.parametrize("domain", sorted(GENERATORS))
def test_every_generator_writes_through_the_writer_and_loads_back_equal(
        domain: str, tmp_path: Path) -> None:
    module_name, names = GENERATORS[domain]
    module = importlib.import_module(module_name)
    names = names or tuple(getattr(module, "FAMILIES", ()) or module.GENERATORS)
    for name in names:
        first = tmp_path / name / "first"
        module.generate(name, 3, first)
        task = load_task(first, domain)
        files = {str(p.relative_to(first)): p.read_bytes() for p in sorted(first.rglob("*"))
                 if p.is_file() and p.name not in ("task.toml", "instruction.md")}
        write_task_folder(tmp_path / name / "again", task.instruction, task.config, files)
        again = load_task(tmp_path / name / "again", domain)
        assert again.model_dump(exclude={"path", "id"}) == task.model_dump(exclude={"path", "id"})
        assert (first / "task.toml").read_text() == (tmp_path / name / "again" / "task.toml"
                                                     ).read_text()


# -- submit keeps its arguments; one hook for per-episode state ---------------------------------
class Answer(ToolArgs):
    word: str = Field(default="", max_length=20)


class WordEnv(TaskEnv):
    """Submit a word; the verifier reads the submitted arguments."""

    domain = "kit-test"
    description = "submit the word 'yes'"
    episode_attributes = ("started",)

    def start_episode(self, task: Task) -> dict[str, Any]:
        self.started = {"task": task.id, "tries": 0}
        return {"first_hint": "say yes"}

    def make_tools(self) -> list[Tool]:
        def tried(args: Answer) -> ToolResult | None:
            self.started["tries"] += 1
            return ToolResult("not yet") if args.word == "again" else None

        return [*shell_tools(lambda: self.session, self.command_timeout),
                self.submit_tool("Submit a word.", Answer, tried)]

    def verify(self, task: Task, session: Session) -> RewardResult:
        right = isinstance(self.submission, Answer) and self.submission.word == "yes"
        return RewardResult(score=float(right), success=right)

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        return [{"tool": "submit", "args": {"word": "yes"}}]


@pytest.mark.sandbox
def test_submit_keeps_its_arguments_and_reset_starts_the_episode_state_afresh(
        tmp_path: Path, answer_task: Callable[..., Path]) -> None:
    env = WordEnv(tasks=str(answer_task(tmp_path / "t")))
    try:
        _, info = env.reset(seed=0)
        assert info["first_hint"] == "say yes" and env.submission is None
        obs, reward, terminated, _, _ = env.step({"tool": "submit", "args": {"word": "again"}})
        assert not terminated and obs["text"] == "not yet"
        assert env.submission == Answer(word="again") and env.started["tries"] == 1
        snap = env.snapshot()
        *_, terminated, _, info = env.step({"tool": "submit", "args": {"word": "yes"}})
        assert terminated and info["reward"].score == 1.0
        env.restore(snap)  # the submission and the domain's state come back as they were
        assert env.submission == Answer(word="again") and env.started["tries"] == 1
        env.reset(seed=0)
        assert env.submission is None and env.started["tries"] == 0
        *_, info = env.step({"tool": "submit", "args": {"word": "no"}})
        assert info["reward"].score == 0.0
    finally:
        env.close()


# -- needs: programs beside modules, install hints that name the plugin's package -----------------
def _plugin_class() -> type[TaskEnv]:
    try:
        module = importlib.import_module("taskgym_example_plugin")
    except ImportError:
        pytest.skip("the example plugin is not installed: pip install ./fixtures/plugin-env")
    plugin: type[TaskEnv] = module.WordEnv
    return plugin


def test_a_plugins_install_hint_names_its_own_package() -> None:
    plugin = _plugin_class()
    needy = type("Needy", (plugin,), {"requires": ("no_such_module_kit28",),
                                      "__module__": plugin.__module__})
    with pytest.raises(MissingDependencyError) as refused:
        needy()
    assert "pip install 'taskgym-example-plugin'" in str(refused.value)
    assert "taskgym[" not in str(refused.value)
    [line] = needy.doctor_checks("needy-v0")
    assert (line.ok, line.optional, line.fix) == (False, True,
                                                  "pip install 'taskgym-example-plugin'")


def test_a_missing_program_is_named_with_its_system_package() -> None:
    plugin = _plugin_class()
    engine = type("Engine", (plugin,), {"requires_programs": {"no-such-engine-kit28": "engine-pkg"},
                                        "__module__": plugin.__module__})
    with pytest.raises(MissingDependencyError, match="no-such-engine-kit28 on this host: sudo "
                                                     "apt-get install engine-pkg"):
        engine()
    [line] = engine.doctor_checks("engine-v0")
    assert line.name == "word: no-such-engine-kit28" and not line.ok


def test_doctor_names_no_domain_and_prints_each_envs_own_lines(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from taskgym import doctor

    source = Path(doctor.__file__).read_text()
    for word in ("cadquery", "godot", "pdfplumber", "coding:", "finance", "trimesh"):
        assert word not in source
    plugin = _plugin_class()
    engine = type("Engine", (plugin,), {"requires_programs": {"no-such-engine-kit28": "pkg"},
                                        "__module__": plugin.__module__})
    monkeypatch.setattr(doctor, "env_classes", lambda: {"engine-v0": engine})
    monkeypatch.setattr(doctor, "_docker_checks", lambda: [])
    names = [check.name for check in doctor.run_checks()]
    assert "word: no-such-engine-kit28" in names


def test_a_plugins_image_folder_is_built_by_taskgym_images_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from taskgym.sandbox.docker import image_set, images

    plugin = _plugin_class()
    (tmp_path / "img").mkdir()
    (tmp_path / "img" / "Dockerfile").write_text("FROM scratch\n")
    owned = type("Owned", (plugin,), {"image_folder": tmp_path / "img",
                                      "__module__": plugin.__module__})
    monkeypatch.setattr(registry, "env_classes", lambda: {"owned-v0": owned})
    assert registry.image_folders() == {"owned-v0": tmp_path / "img"}
    monkeypatch.setattr(images, "_IMAGE_FOLDERS", {})
    images.add_image_folders(registry.image_folders())
    assert images.image_folder("owned-v0") == tmp_path / "img"
    assert "owned-v0" in image_set.image_targets(None)
    assert image_set.image_targets("owned-v0") == ["base", "owned-v0"]
