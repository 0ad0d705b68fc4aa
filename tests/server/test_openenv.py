"""OpenEnv's own clients (the openenv 0.10 package, unchanged) drive taskgym serve: run by
scripts/test_openenv.sh in a venv of its own (marker ``openenv``). openenv is imported in
each test, so that the main run, which deselects them, does not need it; without the
package they fail, they do not skip."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytestmark = [pytest.mark.openenv, pytest.mark.sandbox]

SOLVE = {"tool": "bash", "args": {"command": "echo 42 > /app/answer.txt"}}
SUBMIT = {"tool": "submit", "args": {}}


def test_generic_env_client_plays_to_reward_1_and_the_null_to_0(serve: Any) -> None:
    from openenv.core.generic_client import GenericEnvClient

    served = serve()

    async def play() -> None:
        async with GenericEnvClient(base_url=served.url) as client:
            first = await client.reset(seed=0)
            assert first.observation["text"] == "Write 42 to /app/answer.txt.\n"
            assert first.done is False
            step = await client.step(SOLVE)
            assert (step.reward, step.done) == (0.0, False)
            end = await client.step(SUBMIT)
            assert (end.reward, end.done) == (1.0, True)
            assert end.metadata["verdict"] == "graded" and end.metadata["reward"]["success"]
            state = await client.state()
            assert state["step_count"] == 2 and state["task_id"] == "answer"
            await client.reset(task_id="answer")
            null = await client.step({"type": "call_tool", "tool_name": "submit",
                                      "arguments": {}})
            assert (null.reward, null.done) == (0.0, True)

    asyncio.run(play())


def test_generic_env_client_sync_wrapper(serve: Any) -> None:
    from openenv.core.generic_client import GenericEnvClient

    with GenericEnvClient(base_url=serve().url).sync() as client:
        client.reset()
        client.step(SOLVE)
        end = client.step(SUBMIT)
        assert (end.reward, end.done) == (1.0, True)


def test_generic_env_client_sees_capacity_reached(serve: Any) -> None:
    from openenv.core.generic_client import GenericEnvClient

    served = serve(max_sessions=1)

    async def play() -> None:
        async with GenericEnvClient(base_url=served.url) as first:
            await first.reset()
            async with GenericEnvClient(base_url=served.url) as second:
                with pytest.raises(Exception, match="CAPACITY_REACHED|limit of 1 sessions"):
                    await second.reset()

    asyncio.run(play())


def test_mcp_tool_client_over_the_mcp_routes_and_an_attached_socket(serve: Any) -> None:
    from openenv.core.mcp_client import MCPToolClient

    served = serve()

    async def play() -> None:
        async with MCPToolClient(base_url=served.url) as env:
            await env.reset()
            tools = await env.list_tools()
            assert {"bash", "write_file", "submit"} <= {tool.name for tool in tools}
            assert all(tool.input_schema.get("type") == "object" for tool in tools)
            ran = await env.call_tool("bash", command="echo 42 > /app/answer.txt; echo ok")
            assert "ok" in ran["result"] and ran["error"] is None
            end = await env.call_tool("submit")
            assert (end["reward"], end["done"]) == (1.0, True)
            assert end["metadata"]["reward"]["success"] is True
            state = await env.state()
            assert state.step_count == 2
        assert served.app.state.pool.sessions == {}  # the client closed its session

    asyncio.run(play())


@pytest.mark.parametrize(("calls", "reward"), [
    ([("bash", {"command": "echo 42 > /app/answer.txt"}), ("submit", {})], 1.0),
    ([("submit", {})], 0.0),
])
def test_openenv_harness_adapters_return_the_verified_reward(
        serve: Any, calls: list[tuple[str, dict[str, Any]]], reward: float) -> None:
    """OpenEnv's harness (StepEnvSessionAdapter over GenericEnvClient, driven by
    MCPHarnessAdapter with a scripted model) ends with taskgym's verified reward."""
    import json
    import urllib.request

    from openenv.core.env_server.mcp_types import Tool
    from openenv.core.generic_client import GenericEnvClient
    from openenv.core.harness import MCPHarnessAdapter, StepEnvSessionAdapter
    from openenv.core.harness.rollout import HarnessRunLimits, ModelStepResult
    from openenv.core.llm_client import LLMResponse, ToolCall

    served = serve()
    body = json.dumps({"jsonrpc": "2.0", "method": "tools/list", "id": 1}).encode()
    request = urllib.request.Request(f"{served.url}/mcp", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        tools = [Tool(**tool) for tool in json.loads(response.read())["result"]["tools"]]
    script = iter(calls)

    def model_step(messages: list[Any], tools: list[Any], sampling: dict[str, Any]) -> Any:
        name, args = next(script)
        return ModelStepResult(response=LLMResponse(
            content="", tool_calls=[ToolCall(id=f"call-{len(messages)}", name=name, args=args)]))

    session = StepEnvSessionAdapter(
        GenericEnvClient(base_url=served.url), tool_specs=tools,
        action_builder=lambda name, args: {"tool": name, "args": args},
        initial_messages_builder=lambda result, task: [
            {"role": "user", "content": result.observation["text"]}])
    try:
        rollout = MCPHarnessAdapter().run_white_box(model_step, session,
                                                    HarnessRunLimits(max_turns=5))
        assert rollout.done and len(rollout.tool_trace) == len(calls)
        last = rollout.tool_trace[-1].result
        assert last.done and last.metadata["reward"] == reward
        verified = session.verify(rollout.messages)
        assert (verified.env_reward, verified.done) == (reward, True)
    finally:
        session.close()
    assert served.app.state.pool.sessions == {} or _closing(served)


def _closing(served: Any) -> bool:
    """The pool empties once the closed session's sandbox has stopped."""
    import time

    deadline = time.monotonic() + 30
    while served.app.state.pool.sessions and time.monotonic() < deadline:
        time.sleep(0.05)
    return served.app.state.pool.sessions == {}
