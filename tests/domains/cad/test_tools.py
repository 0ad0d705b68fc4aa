"""The agent's tools over one episode: the warm worker, its bounds, render and measure."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.errors import MissingDependencyError

PLATE = (Path(__file__).parents[3] / "envs" / "cad-cadquery-v0" / "tasks" / "plate-four-holes"
         / "solution" / "solve.py").read_text()


@pytest.fixture(scope="module")
def episode(tight_task: Path) -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("cad-cadquery-v0", tasks=str(tight_task))
    env.reset(seed=0)
    yield env
    env.close()


def step(env: gym.Env[Any, Any], tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    obs, _, terminated, _, info = env.step({"tool": tool, "args": args})
    assert not terminated
    return str(obs["text"]), info


@pytest.mark.sandbox
def test_run_render_measure_and_bounds_in_one_episode(episode: gym.Env[Any, Any]) -> None:
    text, _ = step(episode, "run_cadquery", code=PLATE)
    assert "solids: 1  valid: True  closed: True" in text and "size (100.000, 60.000, 8.000)" in text
    started = time.monotonic()
    text, info = step(episode, "run_cadquery")  # runs /app/part.py again, warm
    assert info["ok"] and time.monotonic() - started < 5
    failing = "import cadquery as cq\nresult = cq.Workplane().box(1, 1, 1).fillet(3)\n"
    text, info = step(episode, "run_cadquery", code=failing)
    assert not info["ok"] and 'File "/app/part.py", line 2' in text and "error:" in text
    assert "File " not in text.replace('File "/app/part.py"', "")  # no CadQuery frame
    text, _ = step(episode, "run_cadquery", code="print('hello')\nwhile True:\n    pass\n")
    assert "ran past 5 s" in text
    bomb = "blocks = []\nwhile True:\n    blocks.append(bytearray(10**8))\n"
    text, _ = step(episode, "run_cadquery", code=bomb)
    assert "MemoryError" in text or "out of memory" in text
    text, info = step(episode, "run_cadquery", code=PLATE + "print('made it')\n")
    assert info["ok"] and text.startswith("output:\nmade it\n")  # survived the runaway runs
    text, info = step(episode, "render", view="top")
    assert info["images"][0].startswith(b"\x89PNG") and "top view" in text
    text, _ = step(episode, "measure", query="holes")
    assert text.count("diameter 6.600 mm") == 4
    text, _ = step(episode, "measure", query="point", point=[0, 0, 4])
    assert "inside" in text
    text, _ = step(episode, "measure", query="distance", point=[0, 0, -5], point_b=[0, 0, 20])
    assert "distance between them 8.0000 mm" in text
    text, info = step(episode, "measure", query="point")
    assert "needs `point`" in info["error"]
    python = os.path.realpath(sys.base_prefix)
    text, _ = step(episode, "bash", command=(
        "find / \\( -name reference.py -o -name 'reference.st?' -o -name solve.py \\) "
        f"-not -path '/proc/*' -not -path '/usr/*' -not -path '{python}/*' 2>/dev/null; ls /.cad"))
    assert "reference" not in text and "solve.py" not in text and "grade.py" in text
    _, reward, terminated, _, info = episode.step({"tool": "submit", "args": {}})
    assert terminated and info["reward"].success and reward == pytest.approx(1.0)


def test_making_the_env_without_cadquery_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "cadquery" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r"pip install 'taskgym\[cad\]'"):
        taskgym.make("cad-cadquery-v0")


def test_tracebacks_show_the_agents_frames_only() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("taskgym_inside_workerloop",
                                                  Path(__file__).parents[3] / "src" / "taskgym"
                                                  / "tools" / "inside" / "workerloop.py")
    assert spec is not None and spec.loader is not None
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    code = "def helper():\n    return int('x')\n\nhelper()\n"
    try:
        exec(compile(code, "/app/part.py", "exec"), {})
    except ValueError as exc:
        text = worker.user_traceback(exc, "/app/part.py")
    assert text.splitlines()[0] == "Traceback (most recent call last):"
    assert text.count('File "/app/part.py"') == 2 and __file__ not in text
    assert text.endswith("ValueError: invalid literal for int() with base 10: 'x'")
