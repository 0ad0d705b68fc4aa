"""taskgym.remote.RemoteEnv against a real server: the blocking and asyncio APIs, and the
CLI's refusal to serve beyond loopback without a token."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import gymnasium as gym
import pytest

import taskgym
from taskgym.cli import main
from taskgym.remote import RemoteEnv, RemoteError
from taskgym.server import is_loopback, serve

pytestmark = [pytest.mark.sandbox]

SOLVE = {"tool": "bash", "args": {"command": "echo 42 > /app/answer.txt"}}
SUBMIT = {"tool": "submit", "args": {}}


def test_remote_env_blocking_episodes(serve: Any) -> None:
    env = RemoteEnv(serve().url)
    assert isinstance(env, gym.Env)
    try:
        obs, info = env.reset(seed=0)
        assert obs == {"text": "Write 42 to /app/answer.txt.\n"} and info["task_id"] == "answer"
        assert "terminated" not in info
        assert env.step(SOLVE)[1:4] == (0.0, False, False)
        obs, reward, terminated, truncated, info = env.step(SUBMIT)
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["reward"]["success"] is True and info["verdict"] == "graded"
        assert env.state()["done"] is True
        env.reset(options={"task_id": "answer"})
        assert env.step(SUBMIT)[1:3] == (0.0, True)
        env.reset()
        for action in ({"tool": "nope"}, "not json", 3, object(), b"\xff"):  # as in process:
            obs, reward, terminated, truncated, info = env.step(action)  # error observations
            assert obs["text"].startswith("error:") and "error" in info, action
            assert (reward, terminated, truncated) == (0.0, False, False)
    finally:
        env.close()


def test_remote_env_asyncio_episodes(serve: Any) -> None:
    served = serve()

    async def episode(action: dict[str, Any]) -> float:
        env = RemoteEnv(served.url)
        try:
            await env.areset()
            if action is not SUBMIT:
                await env.astep(action)
            reward = (await env.astep(SUBMIT))[1]
            return reward
        finally:
            await env.aclose()

    async def both() -> list[float]:
        return list(await asyncio.gather(episode(SOLVE), episode(SUBMIT)))

    assert asyncio.run(both()) == [1.0, 0.0]


def test_remote_env_raises_the_servers_refusals(serve: Any) -> None:
    served = serve(max_sessions=1, idle_timeout=1.0)
    first, second = RemoteEnv(served.url), RemoteEnv(served.url)
    try:
        first.reset()
        with pytest.raises(RemoteError) as refused:
            second.reset()
        assert refused.value.code == "CAPACITY_REACHED"
        deadline = time.monotonic() + 30  # the idle timeout closes the first's session
        while served.app.state.pool.sessions and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(RemoteError) as idle:
            first.step(SOLVE)
        assert idle.value.code == "SESSION_ERROR"
    finally:
        first.close()
        second.close()


def test_remote_env_one_api_per_object(serve: Any) -> None:
    env = RemoteEnv(serve().url)
    try:
        env.reset()
        with pytest.raises(taskgym.ConfigError, match="blocking API"):
            asyncio.run(env.areset())
    finally:
        env.close()
    with pytest.raises(taskgym.ConfigError, match="http"):
        RemoteEnv("localhost:8000")


def test_serving_beyond_loopback_needs_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    with pytest.raises(taskgym.ConfigError, match="give a token"):
        serve("coding-terminal-v0", host="0.0.0.0")
    assert main(["serve", "coding-terminal-v0", "--host", "0.0.0.0"]) == 2
    assert "give a token" in capsys.readouterr().err


def test_the_cli_serves_with_its_options(answer_tasks: str, local_backend: Any) -> None:
    import os
    import socket
    import subprocess
    import sys
    import urllib.error
    import urllib.request

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [sys.executable, "-m", "taskgym", "serve", "coding-terminal-v0", "--port", str(port),
         "--tasks", answer_tasks, "--max-sessions", "1", "--max-steps", "3"],
        env={**os.environ, "TASKGYM_SERVE_TOKEN": "tok"}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/health", timeout=5).close()
                break
            except OSError:
                assert server.poll() is None, server.communicate()[1]
                assert time.monotonic() < deadline, "taskgym serve did not come up"
                time.sleep(0.2)
        with pytest.raises(urllib.error.HTTPError) as refused:  # the token from the environment
            urllib.request.urlopen(f"{url}/metadata", timeout=5)
        refused.value.close()  # its connection, else a ResourceWarning when it is collected
        assert refused.value.code == 401
        refused.value.close()  # its connection, else a ResourceWarning in a later test
        request = urllib.request.Request(f"{url}/metadata", headers={"Authorization": "Bearer tok"})
        with urllib.request.urlopen(request, timeout=5) as response:
            assert json.loads(response.read())["max_sessions"] == 1
        env = RemoteEnv(url, token="tok")
        try:
            env.reset()
            for _ in range(2):
                assert env.step({"tool": "bash", "args": {"command": "true"}})[3] is False
            assert env.step({"tool": "bash", "args": {"command": "true"}})[3] is True  # --max-steps
        finally:
            env.close()
    finally:
        server.terminate()
        server.communicate(timeout=60)
