"""``taskgym mcp``: the env's tools over MCP, driven by the mcp SDK's own client (in process,
over streamable HTTP in the sessionless 2026-07-28 mode and in the legacy session mode, and
over stdio), with the episodes' sandboxes checked after each way an episode can end."""

from __future__ import annotations

import asyncio
import base64
import os
import random
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from typing import Any

import mcp
import mcp_types as types
import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client

import taskgym
from taskgym.checks import host_state
from taskgym.integrations import AFTER_END
from taskgym.mcp_server import EpisodeHandles, episode_server
from taskgym.mcp_server.results import step_result
from taskgym.server.protocol import step_payload

pytestmark = [pytest.mark.sandbox]

SOLVE = {"command": "echo 42 > /app/answer.txt"}
# the server process imports the taskgym under test (the PYTHONPATH of a worktree's run)
SERVER_ENV = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else None
HACK = {"command": "mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; "
                   "echo '{\"reward\": 1}' > /logs/verifier/reward.json; echo 1 > /tmp/reward.txt"}


def text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def no_sandbox_left(before: set[str], pid: int | None = None) -> set[str]:
    """What the episodes left (processes, cgroups, folders) once given 30 s to go."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and host_state(pid) - before:
        time.sleep(0.1)
    return host_state(pid) - before


async def episode(client: mcp.Client, actions: list[dict[str, Any]], **start: Any
                  ) -> tuple[str, types.CallToolResult]:
    """Start an episode on the handle server, run ``bash`` with each of ``actions``, submit:
    the episode id and submit's result."""
    started = await client.call_tool("start_episode", start)
    assert not started.is_error, text(started)
    episode_id = started.structured_content["episode_id"]
    assert f"[episode_id: {episode_id}]" in text(started)
    for args in actions:
        ran = await client.call_tool("bash", {"episode_id": episode_id, **args})
        assert not ran.is_error, text(ran)
    return episode_id, await client.call_tool("submit", {"episode_id": episode_id})


def test_one_episode_in_process_scores_1_and_refuses_calls_after_its_end(
        answer_tasks: str, local_backend: Any) -> None:
    before = host_state()

    async def main() -> None:
        server = await episode_server("coding-terminal-v0", tasks=answer_tasks)
        async with mcp.Client(server) as client:
            assert client.instructions is not None and "Write 42" in client.instructions
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names == ["bash", "read_file", "write_file", "submit"]
            bad = await client.call_tool("bash", {"nope": 1})
            assert bad.is_error and "invalid arguments for bash" in text(bad)
            unknown = await client.call_tool("rm_rf", {})
            assert unknown.is_error and "rm_rf" in text(unknown)
            assert not (await client.call_tool("bash", SOLVE)).is_error
            end = await client.call_tool("submit", {})
            assert not end.is_error
            assert end.structured_content["verdict"] == "graded"
            assert (end.structured_content["reward"], end.structured_content["success"]) == (1.0, True)
            after = await client.call_tool("bash", {"command": "ls"})
            assert after.is_error and text(after).startswith(AFTER_END)
            assert after.structured_content["reward"] == 1.0

    asyncio.run(main())
    assert no_sandbox_left(before) == set()


def test_a_client_that_leaves_mid_episode_leaves_no_sandbox(answer_tasks: str,
                                                            local_backend: Any) -> None:
    before = host_state()

    async def main() -> None:
        server = await episode_server("coding-terminal-v0", tasks=answer_tasks)
        async with mcp.Client(server) as client:
            assert not (await client.call_tool("bash", {"command": "ls /app"})).is_error
            assert host_state() - before  # the episode's sandbox runs

        async with mcp.Client(server) as again:
            late = await again.call_tool("bash", {"command": "ls"})
            assert late.is_error and "its first client left" in text(late)

    asyncio.run(main())
    assert no_sandbox_left(before) == set()


def test_a_bad_task_id_fails_the_stdio_server_at_start(answer_tasks: str,
                                                       local_backend: Any) -> None:
    before = host_state()
    with pytest.raises(taskgym.ConfigError):
        asyncio.run(episode_server("coding-terminal-v0", tasks=answer_tasks, task_id="nope"))
    assert no_sandbox_left(before) == set()


def test_two_concurrent_episodes_see_only_their_own_files(answer_tasks: str,
                                                          local_backend: Any) -> None:
    handles = EpisodeHandles("coding-terminal-v0", tasks=answer_tasks)
    before = host_state()

    async def main() -> None:
        async with mcp.Client(handles.server) as client:
            first, second = [(await client.call_tool("start_episode", {}))
                             .structured_content["episode_id"] for _ in range(2)]
            assert first != second
            await asyncio.gather(
                client.call_tool("bash", {"episode_id": first, "command": "echo A > /app/mine"}),
                client.call_tool("bash", {"episode_id": second, "command": "echo B > /tmp/mine"}))
            for episode_id, own, other in ((first, "/app/mine", "/tmp/mine"),
                                           (second, "/tmp/mine", "/app/mine")):
                seen = await client.call_tool("bash", {"episode_id": episode_id, "command":
                                                       f"cat {own}; ls {other} /app"})
                assert text(seen).startswith("A" if episode_id == first else "B")
                assert "No such file" in text(seen)
            ended = await client.call_tool("end_episode", {"episode_id": first})
            assert ended.structured_content["reward"] is None
            assert "not graded" in text(ended)
            assert list(handles.pool.sessions) == [second]
            gone = await client.call_tool("bash", {"episode_id": first, "command": "ls"})
            assert gone.is_error and "no live episode" in text(gone)

    asyncio.run(main())  # the client's end ends the server's lifespan: the second episode too
    assert handles.pool.sessions == {}
    assert no_sandbox_left(before) == set()


@pytest.mark.hacks
def test_a_fake_reward_file_through_mcp_scores_0(answer_tasks: str, local_backend: Any) -> None:
    handles = EpisodeHandles("coding-terminal-v0", tasks=answer_tasks)

    async def main() -> None:
        async with mcp.Client(handles.server) as client:
            _, end = await episode(client, [HACK])
            assert end.structured_content["verdict"] == "graded"
            assert (end.structured_content["reward"], end.structured_content["success"]) == (0.0, False)

    asyncio.run(main())


@pytest.mark.docker
@pytest.mark.hacks
def test_on_docker_an_episode_scores_1_and_a_fake_reward_file_0(answer_tasks: str,
                                                                docker_backend: Any) -> None:
    handles = EpisodeHandles("coding-terminal-v0", tasks=answer_tasks, sandbox=docker_backend)

    async def main() -> None:
        async with mcp.Client(handles.server) as client:
            assert (await episode(client, [SOLVE]))[1].structured_content["reward"] == 1.0
            assert (await episode(client, [HACK]))[1].structured_content["reward"] == 0.0

    asyncio.run(main())
    assert handles.pool.sessions == {}


BAD_CALLS: list[tuple[str, Any]] = [
    ("start_episode", {"task_id": "no-such-task"}),
    ("start_episode", {"seed": -1}),
    ("start_episode", {"seed": "x"}),
    ("start_episode", {"task_id": ["a"]}),
    ("start_episode", {"colour": "red"}),
    ("bash", {"command": "ls"}),
    ("bash", {"episode_id": 7, "command": "ls"}),
    ("bash", {"episode_id": "0" * 32, "command": "ls"}),
    ("end_episode", {}),
    ("nope", {"episode_id": "x"}),
    ("", {}),
]


def test_bad_calls_are_is_error_results_and_leave_no_episode(answer_tasks: str,
                                                             local_backend: Any) -> None:
    handles = EpisodeHandles("coding-terminal-v0", tasks=answer_tasks)
    before = host_state()

    async def main() -> None:
        async with mcp.Client(handles.server) as client:
            for name, args in BAD_CALLS:
                result = await client.call_tool(name, args)
                assert result.is_error, (name, args, text(result))
                assert handles.pool.sessions == {}, (name, args)
            episode_id = (await client.call_tool("start_episode", {})).structured_content["episode_id"]
            for args in ({"command": 5}, {"command": "ls", "extra": 1}, {}, {"command": "\x00"}):
                result = await client.call_tool("bash", {"episode_id": episode_id, **args})
                assert result.is_error, (args, text(result))
            assert (await episode_end(client, episode_id)) == 1.0

    asyncio.run(main())
    assert no_sandbox_left(before) == set()


async def episode_end(client: mcp.Client, episode_id: str) -> float:
    await client.call_tool("bash", {"episode_id": episode_id, **SOLVE})
    end = await client.call_tool("submit", {"episode_id": episode_id})
    reward: float = end.structured_content["reward"]
    return reward


def test_random_calls_never_break_the_server(answer_tasks: str, local_backend: Any) -> None:
    handles = EpisodeHandles("coding-terminal-v0", tasks=answer_tasks, max_episodes=2)
    rng = random.Random(2026)
    values: list[Any] = [None, True, -1, 0, 2**70, 1e308, "", "x" * 5000, "\udcff", [], {}, [1, {}],
                         {"a": {"b": None}}, "0" * 32]
    names = ["start_episode", "end_episode", "bash", "read_file", "write_file", "submit", "",
             "x" * 300, "start_episode "]
    keys = ["episode_id", "task_id", "seed", "command", "path", "content", "", "\x00"]

    async def main() -> None:
        async with mcp.Client(handles.server) as client:
            live: list[str] = []
            started = stepped = 0
            for _ in range(150):
                name = rng.choice(names)
                args = {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 3))}
                if rng.random() < 0.3:  # valid calls now and then, to start and step episodes
                    args = {} if name == "start_episode" or not live else {"command": "true"}
                    name = "bash" if args else "start_episode"
                if live and rng.random() < 0.7:
                    args["episode_id"] = rng.choice(live)
                result = await client.call_tool(name, args)
                assert isinstance(result, types.CallToolResult)
                if isinstance(result.structured_content, dict) and "task_id" in result.structured_content:
                    live.append(result.structured_content["episode_id"])
                    started += 1
                stepped += "[exit code 0]" in text(result)
                live = [episode for episode in live if episode in handles.pool.sessions]
            assert started and stepped, (started, stepped)  # live episodes were called too
            for episode_id in live:
                await client.call_tool("end_episode", {"episode_id": episode_id})
            _, end = await episode(client, [SOLVE])
            assert end.structured_content["reward"] == 1.0

    asyncio.run(main())
    assert handles.pool.sessions == {}


def test_a_tool_image_is_image_content(local_backend: Any) -> None:
    async def main() -> None:
        server = await episode_server("finance-pdf-v0", task_id="co0-08-multihop")
        async with mcp.Client(server) as client:
            result = await client.call_tool("page_image", {"page": 1})
            assert not result.is_error and "PNG" in text(result)
            images = [block for block in result.content if isinstance(block, types.ImageContent)]
            assert len(images) == 1 and images[0].mime_type == "image/png"
            assert base64.b64decode(images[0].data).startswith(b"\x89PNG\r\n\x1a\n")

    asyncio.run(main())


def test_the_episode_cap_is_a_clear_capacity_error(answer_tasks: str, local_backend: Any) -> None:
    handles = EpisodeHandles("coding-terminal-v0", tasks=answer_tasks, max_episodes=1)

    async def main() -> None:
        async with mcp.Client(handles.server) as client:
            first = (await client.call_tool("start_episode", {})).structured_content["episode_id"]
            refused = await client.call_tool("start_episode", {})
            assert refused.is_error and "at capacity" in text(refused)
            assert "limit of 1 sessions" in text(refused)
            assert await episode_end(client, first) == 1.0
            assert not (await client.call_tool("start_episode", {})).is_error  # room again

    asyncio.run(main())


def test_a_second_call_of_a_busy_episode_is_refused_not_interleaved(answer_tasks: str,
                                                                     local_backend: Any) -> None:
    handles = EpisodeHandles("coding-terminal-v0", tasks=answer_tasks)

    async def main() -> None:
        async with mcp.Client(handles.server) as client:
            episode_id = (await client.call_tool("start_episode", {})).structured_content["episode_id"]
            slow = asyncio.create_task(client.call_tool("bash", {
                "episode_id": episode_id, "command": "sleep 1; echo 42 > /app/answer.txt"}))
            while not handles.pool.sessions[episode_id].busy:
                await asyncio.sleep(0.01)
            refused = await client.call_tool("submit", {"episode_id": episode_id})
            assert refused.is_error and "running another call" in text(refused)
            assert not (await slow).is_error
            end = await client.call_tool("submit", {"episode_id": episode_id})
            assert end.structured_content["reward"] == 1.0

    asyncio.run(main())


def test_an_idle_episode_is_closed_with_its_sandbox(answer_tasks: str, local_backend: Any) -> None:
    handles = EpisodeHandles("coding-terminal-v0", tasks=answer_tasks, idle_timeout=0.5)
    before = host_state()

    async def main() -> None:
        async with mcp.Client(handles.server) as client:
            episode_id = (await client.call_tool("start_episode", {})).structured_content["episode_id"]
            deadline = time.monotonic() + 30
            while handles.pool.sessions and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert no_sandbox_left(before) == set()
            late = await client.call_tool("bash", {"episode_id": episode_id, "command": "ls"})
            assert late.is_error and "without a call" in text(late)

    asyncio.run(main())


def test_a_no_verdict_end_is_reported_as_none_not_as_a_reward_of_0() -> None:
    verdictless = taskgym.RewardResult.no_verdict(taskgym.FailureClass.BACKEND_LOST,
                                                  "the docker engine went away")
    info = {"reward": verdictless, "verdict": "none", "failure": "backend_lost",
            "error": verdictless.summary(), "images": [b"\x89PNG fake"]}
    result = step_result(step_payload({"text": "x"}, 0.0, True, False, info))
    assert result.is_error
    assert result.structured_content["verdict"] == "none"
    assert result.structured_content["reward"] is None
    assert result.structured_content["failure"] == "backend_lost"
    assert "the docker engine went away" in result.structured_content["summary"]
    images = [block for block in result.content if isinstance(block, types.ImageContent)]
    assert [(image.mime_type, image.data) for image in images] == [("image/png", "iVBORyBmYWtl")]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_over_http_in_both_protocol_eras(serve_mcp: Any, mode: str) -> None:
    served = serve_mcp()

    async def main() -> None:
        async with mcp.Client(served.url, mode=mode) as client:
            if mode == "auto":  # the 2026-07-28 protocol: no initialize, no MCP session
                assert client.protocol_version == "2026-07-28"
            else:
                assert client.protocol_version < "2026"
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names[0] == "start_episode" and names[-1] == "end_episode"
            rewards = await asyncio.gather(*(episode(client, actions) for actions in ([SOLVE], [])))
            assert [end.structured_content["reward"] for _, end in rewards] == [1.0, 0.0]

    asyncio.run(main())
    assert served.episodes.sessions == {}


def test_garbage_over_http_is_refused_and_the_server_carries_on(serve_mcp: Any) -> None:
    served = serve_mcp()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    bodies = [b"", b"not json", b"[]", b"{}", b"\xff\xfe", b'{"jsonrpc": "2.0"}',
              b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": 7}',
              b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 7}}']
    for body in bodies:
        for version in (None, "2026-07-28", "2025-11-25", "1999-01-01"):
            request = urllib.request.Request(served.url, data=body, method="POST", headers={
                **headers, **({"MCP-Protocol-Version": version} if version else {})})
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    status = answer.status
            except urllib.error.HTTPError as refused:
                status = refused.code
                refused.close()
            assert status < 500, (body, version, status)

    async def main() -> None:
        async with mcp.Client(served.url) as client:
            assert (await episode(client, [SOLVE]))[1].structured_content["reward"] == 1.0

    asyncio.run(main())


def test_server_shutdown_closes_every_episode(serve_mcp: Any) -> None:
    before = host_state()
    served = serve_mcp()

    async def main() -> None:
        async with mcp.Client(served.url) as client:
            for _ in range(2):
                assert not (await client.call_tool("start_episode", {})).is_error

    asyncio.run(main())
    assert len(served.episodes.sessions) == 2  # a sessionless client leaves them to the server
    served.stop()
    assert served.episodes.sessions == {}
    assert no_sandbox_left(before) == set()


def test_the_per_client_limit_over_http(serve_mcp: Any) -> None:
    served = serve_mcp(max_episodes_per_client=1)

    async def main() -> None:
        async with mcp.Client(served.url) as client:
            assert not (await client.call_tool("start_episode", {})).is_error
            refused = await client.call_tool("start_episode", {})
            assert refused.is_error and "client 127.0.0.1 already has 1 sessions" in text(refused)

    asyncio.run(main())


def test_a_token_guards_the_http_server(serve_mcp: Any) -> None:
    served = serve_mcp(token="s3cret")
    with urllib.request.urlopen(f"{served.base}/health", timeout=30) as health:
        assert health.status == 200
    request = urllib.request.Request(served.url, data=b"{}", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 401
    refused.value.close()


def test_the_cli_wants_a_token_off_loopback(answer_tasks: str) -> None:
    command = [sys.executable, "-m", "taskgym", "mcp", "coding-terminal-v0", "--tasks", answer_tasks,
               "--transport", "http", "--host", "0.0.0.0", "--port", "1"]
    refused = subprocess.run(command, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "TASKGYM_SERVE_TOKEN": ""})
    assert refused.returncode == 2 and "give a token" in refused.stderr
    stdio_only = subprocess.run([*command[:-4], "--seed", "1"], capture_output=True, text=True,
                                timeout=120)
    assert stdio_only.returncode == 2 and "--task and --seed choose" in stdio_only.stderr


def test_over_stdio_one_episode_per_process(answer_tasks: str, local_backend: Any) -> None:
    before = host_state()
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "taskgym", "mcp", "coding-terminal-v0", "--tasks", answer_tasks], env=SERVER_ENV)
    server_pids: set[str] = set()

    async def main() -> None:
        async with mcp.Client(stdio_client(params)) as client:
            server_pids.update(line.split()[1] for line in host_state() - before
                               if line.startswith("process "))
            assert client.instructions is not None and "Write 42" in client.instructions
            assert not (await client.call_tool("bash", SOLVE)).is_error
            end = await client.call_tool("submit", {})
            assert end.structured_content["reward"] == 1.0

    asyncio.run(main())
    assert server_pids
    assert no_sandbox_left(before) == set()
    for pid in server_pids:  # the server process is gone and left nothing named after it
        assert no_sandbox_left(set(), int(pid)) == set()


def test_closing_a_stdio_client_mid_episode_stops_the_sandbox(answer_tasks: str,
                                                             local_backend: Any) -> None:
    before = host_state()
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "taskgym", "mcp", "coding-terminal-v0", "--tasks", answer_tasks, "--seed", "0"],
        env=SERVER_ENV)
    server_pids: set[str] = set()

    async def main() -> None:
        async with mcp.Client(stdio_client(params)) as client:
            server_pids.update(line.split()[1] for line in host_state() - before
                               if line.startswith("process "))
            assert not (await client.call_tool("bash", {"command": "sleep 0.1; ls /app"})).is_error
            assert any(host_state(int(pid)) for pid in server_pids)  # a sandbox runs

    asyncio.run(main())
    assert no_sandbox_left(before) == set()
    for pid in server_pids:
        assert no_sandbox_left(set(), int(pid)) == set()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGHUP])
def test_a_stop_signal_closes_the_stdio_servers_sandbox(answer_tasks: str, local_backend: Any,
                                                        stop: signal.Signals) -> None:
    server = subprocess.Popen(
        [sys.executable, "-m", "taskgym", "mcp", "coding-terminal-v0", "--tasks", answer_tasks],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, **(SERVER_ENV or {})})
    try:
        deadline = time.monotonic() + 60
        while not host_state(server.pid):  # the episode's sandbox starts with the process
            assert time.monotonic() < deadline and server.poll() is None, server.stderr
            time.sleep(0.05)
        server.send_signal(stop)
        assert server.wait(60) == 0
    finally:
        server.kill()
        server.communicate(timeout=60)
    assert host_state(server.pid) == set()
