"""Preflight: reset refuses an episode its grader could not grade, with doctor's fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.core import preflight
from taskgym.domains.coding.script_needs import script_needs
from taskgym.errors import GraderDependencyError, MissingDependencyError

SRC = Path(__file__).parents[2] / "src"
PYTEST_FOLDERS = [Path(p) for p in ("/usr/lib/python3/dist-packages/pytest",
                                     "/usr/lib/python3/dist-packages/_pytest")]

# The new user's machine, for real: a mount namespace where the system's pytest is an empty
# folder (so /usr/bin/python3 lacks it, in bubblewrap's view of /usr and for doctor alike)
NEW_USER = textwrap.dedent("""
    import json, sys
    import taskgym
    from taskgym.doctor import run_checks
    env = taskgym.make("coding-terminal-v0", tasks=sys.argv[1])
    try:
        env.reset(seed=0)
        refused = None
    except taskgym.GraderDependencyError as exc:
        refused = str(exc)
    started = env.unwrapped.task is not None or not env.unwrapped.is_over
    env.close()
    check = next(c for c in run_checks() if c.name == "coding: python3 + pytest (system)")
    print(json.dumps({"refused": refused, "started": started, "doctor_ok": check.ok,
                      "doctor_fix": check.fix}))
""")


@pytest.mark.sandbox
def test_reset_refuses_the_new_users_case_with_doctors_fix(tmp_path: Path,
                                                          answer_task: Any) -> None:
    if not all(p.is_dir() for p in PYTEST_FOLDERS) or shutil.which("unshare") is None:
        pytest.skip("needs the system's python3-pytest and unshare(1) to hide it")
    answer_task(tmp_path / "tasks" / "t")
    empty = tmp_path / "empty"
    empty.mkdir()
    hide = " && ".join(f"mount --bind {empty} {p}" for p in PYTEST_FOLDERS)
    root = [] if os.geteuid() == 0 else ["--map-root-user"]
    script = tmp_path / "new_user.py"
    script.write_text(NEW_USER)
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", *root, "sh", "-c",
         f"{hide} && exec {sys.executable} {script} {tmp_path / 'tasks'}"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(SRC)})
    if proc.returncode != 0 and "mount" in proc.stderr.split("\n")[0]:
        pytest.skip(f"cannot hide pytest here: {proc.stderr.strip()[:200]}")
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    assert seen["doctor_ok"] is False
    assert seen["doctor_fix"] == "sudo apt-get install python3 python3-pytest"
    assert seen["refused"] == (
        "CodingEnv's task t cannot be graded here: coding: python3 + pytest (system): pytest "
        "missing in this machine's /usr; fix: sudo apt-get install python3 python3-pytest "
        "(taskgym doctor checks this machine)")
    assert seen["started"] is False  # refused before any episode began


@pytest.mark.sandbox
def test_one_probe_per_backend_view_and_needs(tmp_path: Path, answer_task: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    answer_task(tmp_path / "a")
    answer_task(tmp_path / "b")
    probes: list[preflight.GraderNeeds] = []
    probe = preflight._probe

    def counted(backend: Any, needs: preflight.GraderNeeds, image: str | None) -> str | None:
        probes.append(needs)
        return probe(backend, needs, image)

    monkeypatch.setattr(preflight, "_probe", counted)
    preflight.clear_cache()
    envs = [taskgym.make("coding-terminal-v0", tasks=str(tmp_path)) for _ in range(2)]
    try:
        for env in envs:
            for seed in range(3):
                env.reset(seed=seed)
                assert env.step({"tool": "submit", "args": {}})[4]["reward"].graded
    finally:
        for env in envs:
            env.close()
    assert [n.requirements for n in probes] == [(preflight.PYTEST,)]


@pytest.mark.sandbox
def test_a_harbor_test_sh_asking_for_a_missing_plugin_is_refused(tmp_path: Path) -> None:
    # a real Harbor task whose test.sh runs pytest -p ctrf --ctrf: the system's python3 lacks
    # pytest-json-ctrf, so every grade would have scored 0 with no error
    if subprocess.run(["/usr/bin/python3", "-I", "-c", "import ctrf"],
                      capture_output=True).returncode == 0:
        pytest.skip("pytest-json-ctrf is installed for the system's python3")
    task = tmp_path / "ctrf-task"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n')
    (task / "instruction.md").write_text("Write 42 to /app/answer.txt.\n")
    (task / "tests" / "test_outputs.py").write_text(
        "def test_answer():\n    assert open('/app/answer.txt').read().strip() == '42'\n")
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        "python3 -m pytest -p ctrf --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA\n"
        "if [ $? -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
    env = taskgym.make("coding-terminal-v0", tasks=str(task))
    try:
        with pytest.raises(GraderDependencyError) as refused:
            env.reset(seed=0)
    finally:
        env.close()
    assert isinstance(refused.value, MissingDependencyError)
    assert str(refused.value) == (
        "CodingEnv's task ctrf-task cannot be graded here: tests/test.sh: the pytest plugin "
        "pytest-json-ctrf: ctrf missing in this machine's /usr; fix: /usr/bin/python3 -m pip "
        "install pytest-json-ctrf (the test script's python3 is the system's) (taskgym doctor "
        "checks this machine)")


@pytest.mark.sandbox
def test_a_test_sh_whose_commands_are_there_starts(tmp_path: Path) -> None:
    task = tmp_path / "plain"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n')
    (task / "instruction.md").write_text("x\n")
    (task / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\nwc -c < /app/x | tr -d ' ' > /dev/null\n"
        "echo 0 > /logs/verifier/reward.txt\n")
    env = taskgym.make("coding-terminal-v0", tasks=str(task))
    try:
        env.reset(seed=0)
        assert env.step({"tool": "submit", "args": {}})[4]["reward"].graded
    finally:
        env.close()


@pytest.mark.docker
def test_docker_probes_in_the_envs_image(tmp_path: Path) -> None:
    # on docker the grader's view is the env's image: pytest-json-ctrf is not in it, and the
    # fix names the image's Dockerfile (building taskgym's image again would not add it)
    task = tmp_path / "ctrf-task"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n')
    (task / "instruction.md").write_text("x\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\npytest -p ctrf --ctrf x.json /tests\n")
    env = taskgym.make("coding-terminal-v0", tasks=str(task), sandbox="docker")
    try:
        with pytest.raises(GraderDependencyError) as refused:
            env.reset(seed=0)
    finally:
        env.close()
    assert "ctrf missing in the image taskgym/coding-terminal-v0; fix: add pytest-json-ctrf " \
           "to the Dockerfile of taskgym/coding-terminal-v0" in str(refused.value)


# -- the static read of a test script (no sandbox) -------------------------------------------


def test_script_needs_reads_commands_and_plugins() -> None:
    found = script_needs(textwrap.dedent("""\
        #!/bin/bash
        set -e
        check() { jq . /logs/x.json; }
        export TOTAL=$(python3 -c "print(1)")
        case "$1" in
          fast) rg x ;;
        esac
        for f in /tests/*.in; do wc -l "$f"; done
        cat <<EOF > /tmp/notes
        notacommand here
        EOF
        timeout 10 cmp -s a b && sudo -E make
        [[ -f x ]] && echo ok
        n=$(( 3 + 4 ))
        > /logs/verifier/reward.txt
        /app/build.sh
        pytest --ctrf /logs/c.json -p myplug -p no:cacheprovider --cov=app -n 2 /tests
        python3 -m pytest --timeout=30 --html r.html /tests
    """))
    assert found.programs == ["jq", "python3", "rg", "wc", "cat", "cmp", "make", "pytest"]
    assert found.plugins == {"ctrf": "pytest-json-ctrf", "myplug": "", "pytest_cov": "pytest-cov",
                             "xdist": "pytest-xdist", "pytest_timeout": "pytest-timeout",
                             "pytest_html": "pytest-html"}
    assert not found.installs
    assert found.unloaded == {"ctrf": "--ctrf", "pytest_cov": "--cov", "xdist": "-n",
                              "pytest_timeout": "--timeout", "pytest_html": "--html"}
    requirements = found.requirements()
    assert [r.name for r in requirements][:2] == ["tests/test.sh: the commands it runs",
                                                   "tests/test.sh: the pytest plugin "
                                                   "pytest-json-ctrf"]
    cov = next(r for r in requirements if r.modules == ("pytest_cov",))
    assert cov.host_fix() == "sudo apt-get install python3-pytest-cov"


def test_script_needs_stops_at_the_first_install() -> None:
    # what the script installs as it runs (uv, its pytest and plugins) is left to the run
    found = script_needs(textwrap.dedent("""\
        #!/bin/bash
        apt-get update && apt-get install -y curl
        curl -LsSf https://example.invalid/uv.sh | sh
        uvx -w pytest-json-ctrf pytest --ctrf /logs/c.json /tests
    """))
    assert (found.programs, found.plugins, found.installs) == (["apt-get"], {}, True)
    assert found.unloaded == {"ctrf": "--ctrf"}  # uvx's pytest inherits the grader's setting
    assert script_needs("PYTEST_ADDOPTS='-p ctrf' pytest --ctrf c.json /tests\n").unloaded == {}


@pytest.mark.sandbox
@pytest.mark.parametrize("loaded", [False, True])
def test_a_plugin_flag_without_its_p_is_refused_at_reset(tmp_path: Path, loaded: bool) -> None:
    # taskgym's grader turns pytest's plugin autoloading off: pytest --timeout 5 (no -p) is
    # refused by pytest even where pytest-timeout is installed, so every grade would fail.
    # A conftest.py that loads the plugin by name makes it fine (then the system's python3
    # lacks pytest-timeout: the preflight says so)
    task = tmp_path / "autoload"
    (task / "tests").mkdir(parents=True)
    (task / "task.toml").write_text('version = "1.0"\n')
    (task / "instruction.md").write_text("x\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\npython3 -m pytest --timeout 5 /tests\n")
    if loaded:
        (task / "tests" / "conftest.py").write_text('pytest_plugins = ["pytest_timeout"]\n')
    env = taskgym.make("coding-terminal-v0", tasks=str(task))
    try:
        with pytest.raises(taskgym.TaskgymError) as refused:
            env.reset(seed=0)
    finally:
        env.close()
    if loaded:
        assert isinstance(refused.value, GraderDependencyError)
        assert "the pytest plugin pytest-timeout: pytest_timeout missing" in str(refused.value)
    else:
        assert isinstance(refused.value, taskgym.ConfigError)
        assert str(refused.value) == (
            f"{task / 'tests' / 'test.sh'} runs pytest --timeout with no -p pytest_timeout: "
            "taskgym's grader turns pytest's plugin autoloading off "
            "(PYTEST_DISABLE_PLUGIN_AUTOLOAD=1, so that no plugin planted in /app loads), so "
            "pytest refuses the flag and every grade would fail; load the plugin by name in the "
            "script: pytest -p pytest_timeout --timeout ...")


def test_fixes_are_doctors_words() -> None:
    assert preflight.PYTEST.host_fix() == "sudo apt-get install python3 python3-pytest"
    assert preflight.extra_fix("cad") == "pip install 'taskgym[cad]'"
    assert preflight.image_fix("coding-terminal-v0") == "taskgym images build coding-terminal-v0"


@pytest.mark.parametrize("env_id", ["cad-cadquery-v0", "coding-terminal-v0", "finance-pdf-v0",
                                    "game-godot-v0", "mesh-trimesh-v0"])
def test_every_grader_that_runs_in_a_sandbox_names_its_needs(env_id: str) -> None:
    try:
        env = taskgym.make(env_id).unwrapped
    except MissingDependencyError as exc:
        pytest.skip(str(exc))
    try:
        task = env.task_set.pick(0)
        needs = env.grader_needs(task)
    finally:
        env.close()
    if env.domain == "finance":  # graded in this process (its requires, checked by make)
        assert needs is None
    else:
        assert needs is not None and needs.requirements


def test_a_script_in_another_language_needs_its_interpreter() -> None:
    python = "#!/usr/bin/python3\nimport os\ngot = os.getcwd().stdout\nopen('x').write('1')\n"
    assert script_needs(python).programs == ["/usr/bin/python3"]
    assert script_needs("#!/usr/bin/env -S node --x\nconsole.log(1)\n").programs == ["node"]
    assert script_needs("#!/usr/bin/env bash\nrg x\n").programs == ["rg"]


class _Answers:
    """A backend whose sandboxes answer the probe with fixed lines (no sandbox runs)."""

    def __init__(self, name: str, stdout: str, timed_out: bool = False) -> None:
        self.name, self.stdout, self.timed_out, self.starts = name, stdout, timed_out, []

    def start(self, spec: Any, seed: Any = None) -> Any:
        from taskgym.sandbox import ExecResult

        self.starts.append(spec)
        answer = ExecResult(stdout=self.stdout, stderr="", exit_code=0, duration_sec=0.0,
                            timed_out=self.timed_out)
        return type("Session", (), {"exec": lambda s, c, timeout=None: answer,
                                    "close": lambda s: None})()


CADQUERY = preflight.Requirement("cad: cadquery", programs=("python3",), modules=("cadquery",),
                                 extra="cad")


@pytest.mark.parametrize(("backend", "image", "fix"), [
    ("local", "taskgym/cad-cadquery-v0", "cadquery missing in taskgym's own Python; fix: pip "
     "install 'taskgym[cad]' (taskgym doctor checks this machine)"),
    ("docker", None, "cadquery missing in the image taskgym/host-python; fix: taskgym images "
     "build host-python"),
    ("docker", "taskgym/cad-cadquery-v0", "cadquery missing in the image "
     "taskgym/cad-cadquery-v0; fix: taskgym images build cad-cadquery-v0"),
])
def test_the_fix_follows_the_graders_view(backend: str, image: str | None, fix: str) -> None:
    answers = _Answers(backend, "module cadquery\n")
    needs = preflight.GraderNeeds((CADQUERY,), image=image, host_python=True,
                                  image_fix=preflight.own_image_fix(image,
                                                                    "taskgym/cad-cadquery-v0"))
    with pytest.raises(GraderDependencyError) as refused:
        preflight.preflight(answers, needs, "CadEnv's task t")  # type: ignore[arg-type]
    assert str(refused.value) == f"CadEnv's task t cannot be graded here: cad: cadquery: {fix}"
    with pytest.raises(GraderDependencyError):  # the answer is cached: no second probe
        preflight.preflight(answers, needs, "CadEnv's task t")  # type: ignore[arg-type]
    assert len(answers.starts) == 1
    assert answers.starts[0].image == (image if backend != "local" else None)


def test_a_probe_that_timed_out_refuses_nothing_and_is_asked_again() -> None:
    answers = _Answers("local", "", timed_out=True)
    needs = preflight.GraderNeeds((CADQUERY,), host_python=True)
    for _ in range(2):
        preflight.preflight(answers, needs, "CadEnv's task t")  # type: ignore[arg-type]
    assert len(answers.starts) == 2
