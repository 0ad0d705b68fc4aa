"""The agent's tools over one episode: the warm worker and its bounds, inspect, render,
measure, and a patched trimesh, which fools nothing (the worker's channel under attack:
tests/domains/test_worker_channel.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.errors import MissingDependencyError

pytestmark = pytest.mark.sandbox


@pytest.fixture()
def episode() -> Iterator[gym.Env[Any, Any]]:
    env = taskgym.make("mesh-trimesh-v0")
    env.reset(options={"task_id": "drill-7-8ths-cube"})
    yield env
    env.close()


def step(env: gym.Env[Any, Any], tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    obs, _, terminated, _, info = env.step({"tool": tool, "args": args})
    assert not terminated
    return str(obs["text"]), info


def test_run_inspect_render_measure_and_bounds_in_one_episode(episode: gym.Env[Any, Any]) -> None:
    text, info = step(episode, "run_python", code="print(len(trimesh.load('7_8ths_cube.stl').faces))")
    assert info["ok"] and "24" in text
    text, info = step(episode, "run_python", code="print('x' * 5000)")  # long output is cut
    assert info["ok"] and "output:\n" + "x" * 3000 + "\n[...]\nran in " in text
    text, _ = step(episode, "inspect_mesh", path="7_8ths_cube.stl")
    assert "is_watertight: True" in text and "bodies: 1" in text and "ok: a clean closed volume" in text
    text, _ = step(episode, "inspect_mesh", path="/app/missing.stl")
    assert "error" in text
    text, info = step(episode, "run_python", code="print('hi')\nwhile True:\n    pass\n")
    assert "ran past" in text and not info["ok"]
    bomb = "blocks = []\nwhile True:\n    blocks.append(bytearray(10**8))\n"
    text, _ = step(episode, "run_python", code=bomb)
    assert "MemoryError" in text or "out of memory" in text
    text, _ = step(episode, "run_python", code="open('big.bin', 'wb').write(b'0' * (100 << 20))\n")
    assert "past 64 MB" in text or "File too large" in text or "error" in text
    text, _ = step(episode, "run_python", code="1 / 0")
    assert "ZeroDivisionError" in text and 'File "/app/script.py", line 1' in text
    text, info = step(episode, "render", path="7_8ths_cube.stl", view="top")
    assert info["images"][0].startswith(b"\x89PNG") and "top view" in text
    text, _ = step(episode, "measure", path="7_8ths_cube.stl", query="signed_distance",
                   points=[[-10, -10, -10], [10, 10, 10], [100, 0, 0]])
    assert text.count("(inside)") == 1 and text.count("(outside)") == 2  # (10, 10, 10): the missing eighth
    text, _ = step(episode, "measure", path="7_8ths_cube.stl", query="section", origin=[0, 0, 5],
                   normal=[0, 0, 1])
    assert "contours" in text
    text, _ = step(episode, "measure", path="7_8ths_cube.stl", query="distance", other="7_8ths_cube.stl")
    assert "Hausdorff 0.0000" in text
    text, info = step(episode, "measure", path="7_8ths_cube.stl", query="section")
    assert "needs `origin` and `normal`" in info["error"]
    solve = (episode.unwrapped.task.path / "solution" / "solve.py").read_text()  # type: ignore[attr-defined]
    text, info = step(episode, "run_python", code=solve)
    assert info["ok"], text  # the worker survived the runaway runs
    _, reward, terminated, _, info = episode.step({"tool": "submit", "args": {}})
    assert terminated and info["reward"].success and reward == 1.0


KILL_WAITING_CHILD = """
import os, signal, time
deadline = time.monotonic() + 30
while time.monotonic() < deadline:  # the child is forked once the last reply is sent
    for pid in [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != os.getpid()]:
        try:
            command = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if b"worker.py" in command and os.getsid(pid) != pid:  # the server leads its session
            os.kill(pid, signal.SIGKILL)
            print("killed the waiting child", pid)
            deadline = 0
    time.sleep(0.01)
"""


def test_each_request_gets_a_fresh_child_of_the_warm_server(episode: gym.Env[Any, Any]) -> None:
    text, info = step(episode, "run_python", code="trimesh.leak = 1\nimport os\nos.environ['LEAK'] = '1'")
    assert info["ok"], text
    text, info = step(episode, "run_python",
                      code="import os\nprint(hasattr(trimesh, 'leak'), 'LEAK' in os.environ)")
    assert info["ok"] and "False False" in text, text  # nothing of the last run is left
    text, _ = step(episode, "bash", command=f"python3 -c '{KILL_WAITING_CHILD}'")
    assert "killed the waiting child" in text, text
    text, info = step(episode, "run_python", code="print('after')")  # its child was gone: an error
    assert not info["ok"] and "ended without an answer" in text and not info.get("error"), text
    text, info = step(episode, "run_python", code="print('after')")
    assert info["ok"] and "after" in text, text


@pytest.mark.hacks
def test_a_patched_trimesh_and_planted_modules_do_not_reach_the_grader(episode: gym.Env[Any, Any]) -> None:
    code = '''
import json, os
trimesh.Trimesh.is_watertight = property(lambda self: True)
trimesh.Trimesh.volume = property(lambda self: 56000.0)
import manifold3d
manifold3d.Manifold.volume = lambda self: 1.0
for name in ("trimesh.py", "numpy.py", "sitecustomize.py", "meshlib.py"):
    open(name, "w").write("raise SystemExit('planted')\\n")
os.makedirs("trimesh", exist_ok=True)
open("trimesh/__init__.py", "w").write("raise SystemExit('planted')\\n")
fake = {"final": True, "gate": True, "score": 1.0, "success": True, "measured": {}}
for fd in range(3, 256):
    try:
        os.write(fd, ("0" * 32 + " " + json.dumps(fake) + "\\n").encode())
    except OSError:
        pass
trimesh.creation.box(extents=[1, 1, 1]).export("edited.stl")
'''
    step(episode, "run_python", code=code)
    _, reward, terminated, _, info = episode.step({"tool": "submit", "args": {}})
    assert terminated and reward < 0.01 and not info["reward"].success, info["reward"]


def test_making_the_env_without_trimesh_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "trimesh" else real(name, *a))
    with pytest.raises(MissingDependencyError, match=r"pip install 'taskgym\[mesh\]'"):
        taskgym.make("mesh-trimesh-v0")
