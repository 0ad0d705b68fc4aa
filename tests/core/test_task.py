"""load_task, FolderTaskSet and GeneratedTaskSet on folders made in tmp_path."""

from __future__ import annotations

from pathlib import Path

import pytest

from taskgym.core.task import FolderTaskSet, GeneratedTaskSet, Limits, Task, load_task, source_version
from taskgym.errors import ConfigError, TaskNotFoundError
from taskgym.paths import cache_dir

FULL_TOML = """\
version = "1.0"
[metadata]
difficulty = "hard"
category = "bugfix"
tags = ["python", "caching"]
[agent]
max_steps = 7
timeout_sec = 90
command_timeout_sec = 12.5
[verifier]
timeout_sec = 33
expected_tests = 4
[environment]
memory_mb = 256
pids = 64
disk_mb = 100
cpus = 2
"""


def make_task(folder: Path, instruction: str = "Do the thing.\n", toml: str | None = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "instruction.md").write_text(instruction)
    if toml is not None:
        (folder / "task.toml").write_text(toml)
    return folder


# -- load_task -------------------------------------------------------------------------------


def test_load_task_maps_every_limit(tmp_path):
    folder = make_task(tmp_path / "my-task", "Fix it.\n", FULL_TOML)
    task = load_task(folder, "coding")
    assert task.id == "my-task"
    assert task.domain == "coding"
    assert task.instruction == "Fix it.\n"
    assert task.path == folder.resolve()
    assert (task.difficulty, task.category, task.tags) == ("hard", "bugfix", ("python", "caching"))
    assert task.limits == Limits(max_steps=7, timeout_sec=90.0, command_timeout_sec=12.5,
                                 verifier_timeout_sec=33.0, memory_mb=256, pids=64, disk_mb=100,
                                 cpus=2.0)
    assert task.config["verifier"]["expected_tests"] == 4
    assert task.config["version"] == "1.0"


def test_load_task_defaults_without_toml(tmp_path):
    task = load_task(make_task(tmp_path / "bare", toml=None), "d", task_id="custom-id")
    assert task.id == "custom-id"
    assert task.limits == Limits()
    assert Limits().max_steps == 50 and Limits().verifier_timeout_sec == 300.0
    assert (task.difficulty, task.category, task.tags, dict(task.config)) == (
        "medium", "", (), {})


def test_load_task_partial_sections_keep_other_defaults(tmp_path):
    task = load_task(make_task(tmp_path / "t", toml="[agent]\nmax_steps = 3\n"), "d")
    assert task.limits.max_steps == 3
    assert task.limits.timeout_sec == Limits().timeout_sec
    assert task.limits.memory_mb == Limits().memory_mb


def test_load_task_accepts_str_path(tmp_path):
    folder = make_task(tmp_path / "s")
    assert load_task(str(folder), "d").path == folder


def test_task_is_frozen(tmp_path):
    task = load_task(make_task(tmp_path / "f"), "d")
    with pytest.raises(ValueError):
        task.id = "other"  # type: ignore[misc]


def test_bad_toml_is_a_config_error(tmp_path):
    folder = make_task(tmp_path / "bad", toml="[agent\nmax_steps = 3\n")
    with pytest.raises(ConfigError) as info:
        load_task(folder, "d")
    assert str(folder / "task.toml") in str(info.value)


@pytest.mark.parametrize(("toml", "field"), [
    ("[agent]\nmax_steps = 0\n", "max_steps"),
    ("[agent]\nmax_steps = \"ten\"\n", "max_steps"),
    ("[environment]\nmemory_mb = 8\n", "memory_mb"),
    ("[verifier]\ntimeout_sec = -1\n", "verifier_timeout_sec"),
])
def test_invalid_limit_is_a_config_error(tmp_path, toml, field):
    folder = make_task(tmp_path / "lim", toml=toml)
    with pytest.raises(ConfigError) as info:
        load_task(folder, "d")
    assert field in str(info.value)
    assert str(folder / "task.toml") in str(info.value)


@pytest.mark.parametrize("toml", ["agent = 5\n", "metadata = \"x\"\n"])
def test_section_that_is_not_a_table_is_a_config_error(tmp_path, toml):
    with pytest.raises(ConfigError):
        load_task(make_task(tmp_path / "nt", toml=toml), "d")


def test_tags_as_a_string_are_not_split_into_characters(tmp_path):
    try:
        task = load_task(make_task(tmp_path / "tg", toml='[metadata]\ntags = "python"\n'), "d")
    except ConfigError:
        return
    assert task.tags == ("python",)


def test_missing_instruction_is_a_config_error(tmp_path):
    folder = tmp_path / "empty-task"
    folder.mkdir()
    (folder / "task.toml").write_text("")
    with pytest.raises(ConfigError,
                       match=r"has task.toml but neither instruction.md nor \[\[steps\]\]") as info:
        load_task(folder, "d")
    assert str(folder) in str(info.value)


def test_instruction_md_that_is_a_folder_is_refused(tmp_path):
    (tmp_path / "t" / "instruction.md").mkdir(parents=True)
    with pytest.raises(ConfigError, match="no instruction.md"):
        load_task(tmp_path / "t", "d")


# -- FolderTaskSet ---------------------------------------------------------------------------


@pytest.fixture()
def three_tasks(tmp_path) -> Path:
    root = tmp_path / "tasks"
    for name in ("zeta", "alpha-one", "mid"):
        make_task(root / name, f"instruction of {name}\n")
    (root / "not-a-task").mkdir()
    (root / "README.md").write_text("ignored")
    return root


def test_folder_task_set_sorted_ids(three_tasks):
    tasks = FolderTaskSet(three_tasks, "coding")
    assert tasks.ids() == ["alpha-one", "mid", "zeta"]
    assert len(tasks) == 3
    assert tasks.domain == "coding"
    assert [t.id for t in tasks] == ["alpha-one", "mid", "zeta"]
    assert tasks.get("mid").instruction == "instruction of mid\n"
    assert tasks.get("mid").domain == "coding"


def test_folder_task_set_pick_wraps(three_tasks):
    tasks = FolderTaskSet(three_tasks, "coding")
    assert [tasks.pick(s).id for s in range(7)] == [
        "alpha-one", "mid", "zeta", "alpha-one", "mid", "zeta", "alpha-one"]
    assert tasks.pick(3002).id == "zeta"
    assert tasks.pick(-1).id == "zeta"


def test_folder_task_set_caches_tasks(three_tasks):
    tasks = FolderTaskSet(three_tasks, "coding")
    assert tasks.get("zeta") is tasks.get("zeta")
    assert tasks.pick(2) is tasks.get("zeta")


def test_folder_task_set_unknown_id_suggests(three_tasks):
    tasks = FolderTaskSet(three_tasks, "coding")
    with pytest.raises(TaskNotFoundError) as info:
        tasks.get("alpha-on")
    message = str(info.value)
    assert message == f"no task 'alpha-on' in {three_tasks}; did you mean 'alpha-one'?"
    assert isinstance(info.value, KeyError) and isinstance(info.value, ConfigError)
    with pytest.raises(TaskNotFoundError) as info:
        tasks.get("qqqqqqqqqqq")
    assert str(info.value) == f"no task 'qqqqqqqqqqq' in {three_tasks}"
    with pytest.raises(TaskNotFoundError):
        tasks.get("not-a-task")


def test_folder_task_set_single_task_folder(three_tasks):
    tasks = FolderTaskSet(three_tasks / "mid", "coding")
    assert tasks.ids() == ["mid"]
    assert len(tasks) == 1
    assert tasks.pick(5).id == "mid"
    assert tasks.pick(0).path == (three_tasks / "mid").resolve()


def test_folder_task_set_empty_folder(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="holds no task folders"):
        FolderTaskSet(tmp_path / "empty", "coding")


def test_folder_task_set_missing_folder(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        FolderTaskSet(tmp_path / "nope", "coding")


def test_folder_task_set_bad_task_fails_on_get_only(tmp_path):
    make_task(tmp_path / "good")
    make_task(tmp_path / "broken", toml="[[[")
    tasks = FolderTaskSet(tmp_path, "coding")
    assert tasks.ids() == ["broken", "good"]
    assert tasks.get("good").id == "good"
    with pytest.raises(ConfigError, match="task.toml"):
        tasks.get("broken")


# -- GeneratedTaskSet ------------------------------------------------------------------------


class ToyGenerator:
    """Writes a task folder whose instruction depends only on the seed; counts its calls."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[int] = []

    def __call__(self, seed: int, dest: Path) -> None:
        self.calls.append(seed)
        dest.mkdir(parents=True)
        (dest / "instruction.md").write_text(f"{self.name}: add {seed} and {seed * 7 % 11}\n")
        (dest / "task.toml").write_text(f"[agent]\nmax_steps = {seed + 1}\n")
        (dest / "tests").mkdir()
        (dest / "tests" / "test_sum.py").write_text(f"def test():\n    assert {seed} >= 0\n")


class FailingGenerator:
    def __call__(self, seed: int, dest: Path) -> None:
        dest.mkdir(parents=True)
        (dest / "instruction.md").write_text("half")
        raise RuntimeError(f"generator broke on seed {seed}")


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("TASKGYM_CACHE", str(path))
    return path


def test_cache_dir_follows_env(cache):
    assert cache_dir() == cache
    assert cache.is_dir()


def test_generated_ids_and_pick(cache):
    beta, alpha = ToyGenerator("beta"), ToyGenerator("alpha")
    tasks = GeneratedTaskSet({"beta": beta, "alpha": alpha}, "toy", size=6)
    assert len(tasks) == 6
    # generators are sorted by name; seed s -> generator s % 2 with seed s // 2
    assert [tasks.pick(s).id for s in range(5)] == [
        "alpha-0", "beta-0", "alpha-1", "beta-1", "alpha-2"]
    assert [t.id for t in tasks] == ["alpha-0", "beta-0", "alpha-1", "beta-1", "alpha-2", "beta-2"]
    task = tasks.get("beta-5")
    assert task.instruction == "beta: add 5 and 2\n"
    assert task.limits.max_steps == 6
    assert task.domain == "toy"
    assert task.path == cache / "generated" / "toy" / "beta-0" / "5"


def test_generated_materialised_once(cache):
    gen = ToyGenerator("g")
    tasks = GeneratedTaskSet({"g": gen}, "toy", versions={"g": "v1"})
    first = tasks.get("g-3")
    assert tasks.get("g-3") is first
    assert tasks.pick(3) is first
    assert gen.calls == [3]
    # a new task set (another process, another worker) finds the cached folder
    again = GeneratedTaskSet({"g": gen}, "toy", versions={"g": "v1"}).get("g-3")
    assert gen.calls == [3]
    assert again.path == first.path == cache / "generated" / "toy" / "g-v1" / "3"
    assert again.instruction == first.instruction
    # no temporary folders are left behind
    assert sorted(p.name for p in first.path.parent.iterdir()) == ["3"]


def test_generated_new_version_regenerates(cache):
    gen = ToyGenerator("g")
    GeneratedTaskSet({"g": gen}, "toy", versions={"g": "v1"}).get("g-1")
    task = GeneratedTaskSet({"g": gen}, "toy", versions={"g": "v2"}).get("g-1")
    assert gen.calls == [1, 1]
    assert task.path == cache / "generated" / "toy" / "g-v2" / "1"


def test_generated_deterministic(cache, tmp_path, monkeypatch):
    one = GeneratedTaskSet({"g": ToyGenerator("g")}, "toy").get("g-9")
    monkeypatch.setenv("TASKGYM_CACHE", str(tmp_path / "other-cache"))
    two = GeneratedTaskSet({"g": ToyGenerator("g")}, "toy").get("g-9")
    assert one.path != two.path
    assert one.instruction == two.instruction
    assert one.limits == two.limits
    for name in ("instruction.md", "task.toml", "tests/test_sum.py"):
        assert (one.path / name).read_bytes() == (two.path / name).read_bytes()


@pytest.mark.parametrize(("task_id", "message"), [
    ("gamma-1", "'gamma-1' is not a generated task id (<generator>-<seed>, generators: alpha, "
                "beta)"),
    ("alpha-x", "'alpha-x' is not a generated task id (<generator>-<seed>, generators: alpha, "
                "beta)"),
    ("alpha", "'alpha' is not a generated task id"),
    ("alpha--1", "'alpha--1' is not a generated task id"),
    ("alpa-3", "did you mean 'alpha-3'?"),
])
def test_generated_bad_ids(cache, task_id, message):
    tasks = GeneratedTaskSet({"alpha": ToyGenerator("alpha"), "beta": ToyGenerator("beta")}, "toy")
    with pytest.raises(TaskNotFoundError) as info:
        tasks.get(task_id)
    assert message in str(info.value)
    assert not (cache / "generated").exists()


def test_generated_needs_a_generator():
    with pytest.raises(ConfigError, match="at least one generator"):
        GeneratedTaskSet({}, "toy")


def test_generated_failure_leaves_no_partial_task(cache):
    tasks = GeneratedTaskSet({"bad": FailingGenerator()}, "toy")
    with pytest.raises(RuntimeError, match="generator broke on seed 4"):
        tasks.get("bad-4")
    folder = cache / "generated" / "toy" / "bad-0"
    assert list(folder.iterdir()) == []


def test_source_version_tracks_content(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    first = source_version(a, b)
    assert len(first) == 12 and int(first, 16) >= 0
    assert source_version(a, b) == first
    b.write_text("y = 3\n")
    assert source_version(a, b) != first


def test_task_model_rejects_unknown_fields(tmp_path):
    with pytest.raises(ValueError):
        Task(id="x", domain="d", instruction="i", path=tmp_path, nonsense=1)  # type: ignore[call-arg]


def test_every_task_set_lists_its_ids_in_pick_order(tmp_path: Path) -> None:
    def write(seed: int, dest: Path) -> None:
        dest.mkdir(parents=True)
        (dest / "instruction.md").write_text(f"task {seed}")

    generated = GeneratedTaskSet({"b": write, "a": write}, "demo", size=5)
    assert generated.ids() == ["a-0", "b-0", "a-1", "b-1", "a-2"]
    assert [generated.pick(s).id for s in range(3)] == generated.ids()[:3]
