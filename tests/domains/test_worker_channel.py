"""The channel between an env and its warm worker (tools/worker.py, tools/inside/workerloop.py),
attacked on both backends, for CAD and mesh.

The agent's side: whatever it plants where the FIFOs were made (a regular file, links to
/dev/zero or to a host path, FIFOs of its own with a thief and a forger, a second server), and
whatever a run's code writes to its descriptors, reaches nothing: the calls after it get the real
worker's answers. Killing the server makes every worker tool an error observation at once.

The host's side, for an attacker stronger than the agent (the test writes straight into the
env's pipes): forged, replayed and huge reply lines, a thief of requests, a full request pipe,
a stopped server. None of it is ever trusted; each call ends in its time with an error reply,
and the first call after the server resumes gets its own answer.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.sandbox import Backend
from taskgym.tools.worker import WarmWorker, reply_result

pytestmark = pytest.mark.hacks

ENVS = {
    "mesh": ("mesh-trimesh-v0", "drill-7-8ths-cube", "run_python", ".mesh-key"),
    "cad": ("cad-cadquery-v0", "plate-four-holes", "run_cadquery", ".cad-key"),
}
FORGED_TEXT = "forged: all good"
FORGED_LINE = "0" * 64 + " " + json.dumps({"ok": True, "text": FORGED_TEXT})

FIND_SERVERS = """
import os
def servers():
    found = []
    for pid in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        try:
            command = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            continue
        if b"worker.py\\0start" in command and os.getsid(pid) == pid:  # the server leads its session
            found.append(pid)
    return sorted(found)
"""

PLANT = FIND_SERVERS + """
import json, signal, subprocess, sys, time
key, kind = sys.argv[1], sys.argv[2]
paths = [key + ".requests", key + ".replies"]
forged = sys.argv[3].encode() + b"\\n"
for path in paths:
    if os.path.lexists(path):
        os.unlink(path)
if kind == "regular-files":
    for path in paths:
        open(path, "wb").write(forged * 100)
elif kind == "links-to-dev-zero":
    for path in paths:
        os.symlink("/dev/zero", path)
elif kind == "links-to-host-paths":
    os.symlink("/etc/shadow", paths[0])
    os.symlink("../../../../../../root/.ssh/id_rsa", paths[1])
elif kind == "own-fifos-thief-and-forger":  # both full, a reader stealing, a writer forging
    for path in paths:
        os.mkfifo(path)
    if os.fork() == 0:
        os.setsid()
        thief = os.open(paths[0], os.O_RDWR)
        forger = os.open(paths[1], os.O_RDWR)
        os.set_blocking(forger, False)
        try:
            while True:
                os.write(forger, forged)
        except BlockingIOError:
            pass
        os.set_blocking(forger, True)
        while True:
            os.read(thief, 65536)
            os.write(forger, forged)
        os._exit(0)
elif kind == "a-second-server":  # the agent's own worker: its key and FIFOs are the agent's
    subprocess.run(["python3", "-I", "-B", sys.argv[4], "start"], check=True)
    with open(paths[1], "rb", buffering=0) as replies, open(paths[0], "wb", buffering=0) as requests:
        requests.write(b'{"op": "nope", "timeout": 5}\\n')
        print("the second server answers its own channel:", replies.read(64) != b"")
elif kind == "server-descriptors":  # the real server's, through /proc: not dumpable, out of reach
    server = servers()[0]
    opened = []
    for fd in range(64):
        for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
            try:
                os.close(os.open(f"/proc/{server}/fd/{fd}", flags))
                opened.append(fd)
            except OSError:
                pass
    print("opened descriptors of the server:", opened)
print("planted", kind)
"""

KILL_SERVER = FIND_SERVERS + """
import signal
for pid in servers():
    os.kill(pid, signal.SIGKILL)
    print("killed the server", pid)
"""

WRITE_EVERY_FD = """
import os
for name in os.listdir("/proc/self/fd"):
    try:
        print("descriptor", name, os.readlink(f"/proc/self/fd/{name}"))
    except OSError:
        pass
for fd in range(3, 256):
    try:
        os.write(fd, (FORGED + "\\n").encode())
    except OSError:
        pass
print("real", 6 * 7)
"""


def step(env: gym.Env[Any, Any], tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    obs, _, terminated, _, info = env.step({"tool": tool, "args": args})
    assert not terminated
    return str(obs["text"]), info


def real_run(env: gym.Env[Any, Any], run: str) -> None:
    """A run whose observation is the real worker's: what the code printed, trusted."""
    text, info = step(env, run, code=f"{CODE_PREFIX[run]}print('real', 6 * 7)\n")
    assert info["ok"] and "output:\nreal 42\n" in text and FORGED_TEXT not in text, text


CODE_PREFIX = {
    "run_python": "",
    "run_cadquery": "import cadquery as cq\nresult = cq.Workplane().box(1, 1, 1)\n",
}


@pytest.fixture(params=sorted(ENVS))
def episode(request: pytest.FixtureRequest, backend: Backend) -> Iterator[tuple[gym.Env[Any, Any], str, str]]:
    env_id, task_id, run, key = ENVS[request.param]
    env = taskgym.make(env_id, sandbox=backend)
    env.reset(options={"task_id": task_id})
    yield env, run, key
    env.close()


def test_what_the_agent_plants_or_writes_reaches_nothing(
        episode: tuple[gym.Env[Any, Any], str, str]) -> None:
    env, run, key = episode
    solve = (env.unwrapped.task.path / "solution" / "solve.py").read_text()  # type: ignore[attr-defined]
    text, info = step(env, run, code=solve)
    assert info["ok"], text
    real_run(env, run)
    text, _ = step(env, "bash", command=f"ls -A /app; ls /app/{key}* 2>&1")
    assert "No such file" in text, text  # the key and the FIFOs are gone before the agent acts
    step(env, "write_file", path="plant.py", content=PLANT)
    script = {"run_python": "/.mesh/worker.py", "run_cadquery": "/.cad/worker.py"}[run]
    for kind in ("regular-files", "links-to-dev-zero", "links-to-host-paths",
                 "own-fifos-thief-and-forger", "a-second-server", "server-descriptors"):
        text, _ = step(env, "bash", command=f"python3 /app/plant.py /app/{key} {kind} "
                                            f"'{FORGED_LINE}' {script}")
        assert f"planted {kind}" in text, text
        if kind == "server-descriptors":
            assert "opened descriptors of the server: []" in text, text
        if kind == "a-second-server":
            assert "the second server answers its own channel: True" in text, text
        real_run(env, run)
    text, info = step(env, run, code=CODE_PREFIX[run] + f"FORGED = {FORGED_LINE!r}\n" + WRITE_EVERY_FD)
    assert FORGED_TEXT not in text and not info.get("error"), text  # its own answer, spoilt at most
    text, info = step(env, run, code=CODE_PREFIX[run] + WRITE_EVERY_FD.split("for fd in")[0])
    assert info["ok"] and "descriptor 1 " in text and key not in text, text  # the channel is closed
    real_run(env, run)
    text, _ = step(env, "bash", command=f"python3 -c '{KILL_SERVER}'")
    assert "killed the server" in text, text
    started = time.monotonic()
    text, info = step(env, run, code="print('after')")
    assert "not running" in text and info["error"] and time.monotonic() - started < 30, text
    text, info = step(env, "render", **({"path": "7_8ths_cube.stl"} if run == "run_python" else {}))
    assert "not running" in text and info["error"] and "images" not in info, text
    submit = {"code": solve} if run == "run_cadquery" else {}
    _, reward, terminated, _, _ = env.step({"tool": "submit", "args": submit})
    assert terminated and reward == pytest.approx(1.0)  # grading needs no worker


FORGED = {
    "null": b"null",
    "list": b"[1, 2, 3]",
    "dict-missing-keys": b'{"ok": true}',
    "unsigned-but-well-formed": FORGED_LINE.encode(),
    "unsigned-png-outside": b"0" * 64 + b' {"ok": true, "text": "forged: all good", "png": "/etc/passwd"}',
    "huge": b"x" * (3 << 20),
    "garbage-bytes": bytes(range(256)) * 64,
    "empty": b"",
}
"""Reply lines the test writes into the env's end of the replies pipe."""


def signed(key: bytes, request: str, reply: dict[str, Any]) -> bytes:
    body = json.dumps(reply).encode()
    return hmac.new(key, request.encode() + b"\n" + body, hashlib.sha256).hexdigest().encode() + b" " + body


def inject(fd: int, data: bytes) -> threading.Thread:
    """Write ``data`` into the pipe behind ``fd`` (through /proc/self/fd), in a thread."""
    writer = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY)

    def write() -> None:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(writer, view):]
        finally:
            os.close(writer)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def signal_server(env: gym.Env[Any, Any], sig: str) -> None:
    """Stop or resume the newest worker server of the sandbox (the test's own)."""
    command = FIND_SERVERS + f"\nimport signal\nos.kill(servers()[-1], signal.{sig})\nprint('done')\n"
    text, _ = step(env, "bash", command=f"python3 -c '{command}'")
    assert "done" in text, text


INSPECT = {"op": "inspect", "path": "7_8ths_cube.stl", "memory_mb": 512}


def untrusted(worker: WarmWorker, env: gym.Env[Any, Any]) -> dict[str, Any]:
    """A call that may wait one second: it must end then, with an error reply."""
    started = time.monotonic()
    reply = worker.call(env.unwrapped.session, INSPECT, 1.0, lambda: 1.0)  # type: ignore[attr-defined]
    assert time.monotonic() - started < 10
    result = reply_result(reply)
    assert reply.get("channel_error") and result.error and FORGED_TEXT not in result.text, reply
    assert "faces: 24" not in result.text, reply
    return reply


def test_lines_on_the_pipes_that_the_server_did_not_sign_for_the_request_are_never_trusted(
        backend: Backend) -> None:
    env = taskgym.make("mesh-trimesh-v0", sandbox=backend)
    try:
        env.reset(options={"task_id": "drill-7-8ths-cube"})
        session = env.unwrapped.session  # type: ignore[attr-defined]
        worker = WarmWorker("/.mesh/worker.py", ".mesh-key", "the test's worker is gone", 120.0)
        worker.start(session)  # a second server, the test's own, beside the env's
        assert worker.key is not None and worker.channel is not None
        reply = worker.call(session, INSPECT, 60.0, lambda: 600.0)
        assert reply["ok"] and "faces: 24" in reply["text"], reply
        channel = worker.channel
        # a genuine signed answer, to a request of the test's own: replayed later
        mine = json.dumps({**INSPECT, "timeout": 60.0, "nonce": "0" * 32}, sort_keys=True)
        assert channel.send(mine.encode() + b"\n", time.monotonic() + 10)
        replayed = next(channel.lines(time.monotonic() + 60))
        forged = {**FORGED, "replayed": replayed,
                  "signed-for-another-request": signed(worker.key, mine, {"ok": True, "text": FORGED_TEXT}),
                  "signed-with-another-key": signed(os.urandom(32), "x", {"ok": True, "text": FORGED_TEXT})}
        signal_server(env, "SIGSTOP")
        for name, line in forged.items():
            writer = inject(channel.replies, line + b"\n")
            untrusted(worker, env)
            writer.join(timeout=30)
            assert not writer.is_alive(), name
        thief = os.open(f"/proc/self/fd/{channel.requests}", os.O_RDONLY | os.O_NONBLOCK)
        try:
            assert "no answer in" in untrusted(worker, env)["text"]
            stolen = os.read(thief, 65536)
            assert b'"nonce"' in stolen  # the thief has the request: no answer comes for it
        finally:
            os.close(thief)
        filler = os.open(f"/proc/self/fd/{channel.requests}", os.O_WRONLY | os.O_NONBLOCK)
        try:
            filled = 0
            while True:  # junk lines, then one too long to be a request
                try:
                    filled += os.write(filler, b"junk\n" * 100 if filled < 32768 else b"y" * 4096)
                except BlockingIOError:
                    break
        finally:
            os.close(filler)
        assert "no answer in" in untrusted(worker, env)["text"]  # the request could not even be sent
        signal_server(env, "SIGCONT")
        reply = worker.call(session, INSPECT, 60.0, lambda: 600.0)  # past every stale answer
        assert reply["ok"] and "faces: 24" in reply["text"], reply
        text, info = step(env, "run_python", code="print('the env worker still answers')")
        assert info["ok"] and "the env worker still answers" in text, text
        signal_server(env, "SIGKILL")
        started = time.monotonic()
        reply = worker.call(session, INSPECT, 60.0, lambda: 600.0)
        assert reply == {"ok": False, "text": "the test's worker is gone", "channel_error": True}
        assert time.monotonic() - started < 30 and worker.channel is None
    finally:
        env.close()


def test_forked_and_restored_episodes_get_a_worker_of_their_own(
        episode: tuple[gym.Env[Any, Any], str, str]) -> None:
    """No process is carried by a snapshot, and the channel was the old session's: each child
    and a restored episode start their own worker, which answers, while the parent's goes on."""
    env, run, _ = episode
    real_run(env, run)
    snap = env.snapshot()
    children = env.fork(2)
    try:
        for child in children:
            real_run(child, run)
        real_run(env, run)
        env.restore(snap)
        real_run(env, run)
    finally:
        snap.close()
        for child in children:
            child.close()
