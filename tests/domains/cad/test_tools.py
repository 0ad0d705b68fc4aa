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
from taskgym.sandbox import Backend

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


FORGED = {
    "null": b"null",
    "list": b"[1, 2, 3]",
    "dict-missing-keys": b'{"ok": true}',
    "wrong-types": b'{"ok": "yes", "text": 5, "png": ["/etc/passwd"]}',
    "unsigned-but-well-formed": b"0" * 64 + b' {"ok": true, "text": "forged: all good"}',
    "huge": b"x" * (3 << 20),
    "garbage-bytes": bytes(range(256)) * 64,
    "closed-at-once": b"",
}
"""What a server the agent put in the worker's place answers, one connection each."""

FAKE_SERVER = """
import os, socket, sys, time
me = os.getpid()
for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    try:
        command = open(f"/proc/{pid}/cmdline", "rb").read()
    except OSError:
        continue
    if b"worker.py" in command and b"start" in command and pid != me:
        os.kill(pid, 9)
time.sleep(0.2)
path = "/tmp/.taskgym-cad/worker.sock"
if os.path.exists(path):
    os.unlink(path)
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(4)
for name in sys.argv[1:]:
    conn, _ = server.accept()
    conn.recv(65536)
    try:
        conn.sendall(bytes.fromhex(open(f"/app/forged/{name}").read()))
    except OSError:  # the client stopped reading the huge answer
        pass
    conn.close()
"""


@pytest.mark.hacks
def test_a_server_in_the_workers_place_gets_only_error_observations(backend: Backend,
                                                                   tight_task: Path) -> None:
    env = taskgym.make("cad-cadquery-v0", tasks=str(tight_task), sandbox=backend)
    try:
        env.reset(seed=0)
        for name, answer in FORGED.items():
            step(env, "write_file", path=f"forged/{name}", content=answer.hex())
        step(env, "write_file", path="fake.py", content=FAKE_SERVER)
        step(env, "bash", command="nohup python3 /app/fake.py " + " ".join(FORGED)
             + " >/dev/null 2>&1 &\nsleep 1")
        tools = [("run_cadquery", {"code": PLATE}), ("render", {"view": "top"}),
                 ("measure", {"query": "bbox"})]
        for index, name in enumerate(FORGED):
            tool, args = tools[index % len(tools)]
            text, info = step(env, tool, **args)
            assert "could not be trusted" in text and info["error"], (name, text)
            assert "forged: all good" not in text.split("could not be trusted")[0], name
            assert info.get("ok") is not True and "images" not in info, (name, info)
        text, info = step(env, "run_cadquery", code=PLATE)  # the fake server is done: nobody
        assert "could not be trusted" in text or "not running" in text, text
        step(env, "bash", command="rm -f /tmp/.taskgym-cad/worker.sock")
        text, info = step(env, "measure", query="bbox")
        assert "not running" in text and "submit still grades" in text, text
        _, reward, terminated, _, _ = env.step({"tool": "submit", "args": {"code": PLATE}})
        assert terminated and reward == pytest.approx(1.0)
    finally:
        env.close()


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
