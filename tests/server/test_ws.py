"""``taskgym serve`` over a real socket: OpenEnv's /ws sessions, their errors and limits, and
what happens to a session's sandbox when its client goes away."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time
import urllib.error
import urllib.request
from typing import Any

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import ClientConnection

import taskgym
from taskgym.checks import host_state

pytestmark = [pytest.mark.sandbox]

SOLVE = {"tool": "bash", "args": {"command": "echo 42 > /app/answer.txt"}}
SUBMIT = {"tool": "submit", "args": {}}


def send(ws: ClientConnection, message: Any) -> dict[str, Any]:
    """Send ``message`` (JSON unless already text or bytes) and read the answer."""
    ws.send(message if isinstance(message, (str, bytes)) else json.dumps(message))
    answer: dict[str, Any] = json.loads(ws.recv(timeout=120))
    return answer



def wait_for_no_sandbox(before: set[str]) -> set[str]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and host_state() - before:
        time.sleep(0.1)
    return host_state() - before


def test_an_episode_to_reward_1_and_the_null_to_0(serve: Any) -> None:
    served = serve()
    with served.ws() as ws:
        reset = send(ws, {"type": "reset", "data": {"seed": 0}})
        assert reset["type"] == "observation"
        assert reset["data"]["observation"]["text"] == "Write 42 to /app/answer.txt.\n"
        assert reset["data"]["done"] is False and reset["data"]["reward"] is None
        step = send(ws, {"type": "step", "data": SOLVE})["data"]
        assert (step["reward"], step["done"]) == (0.0, False)
        end = send(ws, {"type": "step", "data": SUBMIT})["data"]
        assert (end["reward"], end["done"]) == (1.0, True)
        assert end["metadata"]["reward"]["success"] is True
        assert end["metadata"]["verdict"] == "graded" and end["metadata"]["terminated"] is True
        state = send(ws, {"type": "state"})
        assert state == {"type": "state", "data": {**state["data"], "step_count": 2,
                                                   "task_id": "answer", "done": True}}
        # the null agent, on the same session
        send(ws, {"type": "reset", "data": {"task_id": "answer", "episode_id": "e-1"}})
        null = send(ws, {"type": "step", "data": SUBMIT})["data"]
        assert (null["reward"], null["done"]) == (0.0, True)
        assert null["metadata"]["reward"]["success"] is False
        assert send(ws, {"type": "state"})["data"]["episode_id"] == "e-1"


def test_openenv_mcp_actions_list_and_call_tools(serve: Any) -> None:
    with serve().ws() as ws:
        send(ws, {"type": "reset", "data": {}})
        tools = send(ws, {"type": "step", "data": {"type": "list_tools"}})["data"]
        names = [tool["name"] for tool in tools["observation"]["tools"]]
        assert "bash" in names and "submit" in names
        assert all(set(tool) == {"name", "description", "input_schema"}
                   for tool in tools["observation"]["tools"])
        called = send(ws, {"type": "step", "data": {"type": "call_tool", "tool_name": "bash",
                                                    "arguments": {"command": "echo hi"}}})["data"]
        assert called["observation"]["tool_name"] == "bash"
        assert "hi" in called["observation"]["result"] and called["observation"]["error"] is None
        wrong = send(ws, {"type": "step", "data": {"type": "call_tool", "tool_name": "nope",
                                                   "arguments": {}}})["data"]
        assert "unknown tool" in wrong["observation"]["error"]["message"]
        send(ws, {"type": "step", "data": {"type": "call_tool", "tool_name": "bash",
                                          "arguments": SOLVE["args"]}})
        end = send(ws, {"type": "step", "data": {"type": "call_tool", "tool_name": "submit",
                                                 "arguments": {}}})["data"]
        assert (end["reward"], end["done"]) == (1.0, True)


def test_error_codes_and_the_session_survives_them(serve: Any) -> None:
    with serve().ws() as ws:
        assert send(ws, "{not json")["data"]["code"] == "INVALID_JSON"
        assert send(ws, b"\x00\x01")["data"]["code"] == "INVALID_JSON"
        assert send(ws, {"type": "dance"})["data"]["code"] == "UNKNOWN_TYPE"
        assert send(ws, [1, 2])["data"]["code"] == "VALIDATION_ERROR"
        assert send(ws, {"type": "step"})["data"]["code"] == "VALIDATION_ERROR"
        bad_reset = send(ws, {"type": "reset", "data": {"sed": 1}})["data"]
        assert bad_reset["code"] == "VALIDATION_ERROR" and "'sed'" in bad_reset["message"]
        missing = send(ws, {"type": "reset", "data": {"task_id": "no-such-task"}})["data"]
        assert missing["code"] == "VALIDATION_ERROR" and "no-such-task" in missing["message"]
        for bad in ({"seed": "abc"}, {"seed": -1}, {"seed": True}, {"options": [1]},
                    {"task_id": 7}):
            answer = send(ws, {"type": "reset", "data": bad})["data"]
            assert answer["code"] == "VALIDATION_ERROR", (bad, answer)
        assert send(ws, {"type": "reset", "data": [1]})["data"]["code"] == "VALIDATION_ERROR"
        # an action the env refuses is an observation, as in process, whatever its JSON type
        send(ws, {"type": "reset", "data": {}})
        for action in ({"tool": 3}, 42, None, "not json", [1], {"type": "call_tool"}):
            refused = send(ws, {"type": "step", "data": action})["data"]
            assert refused["observation"]["text"].startswith("error:"), (action, refused)
            assert (refused["reward"], refused["done"]) == (0.0, False)
        as_text = send(ws, {"type": "step", "data": json.dumps({"tool": "bash",
                                                                "args": {"command": "echo hi"}})})
        assert as_text["data"]["observation"]["text"] == "hi\n[exit code 0]"
        send(ws, {"type": "reset", "data": {}})
        send(ws, {"type": "step", "data": SOLVE})
        assert send(ws, {"type": "step", "data": SUBMIT})["data"]["reward"] == 1.0


def test_a_factory_failure_is_factory_error(serve: Any) -> None:
    served = serve()

    def broken() -> Any:
        raise RuntimeError("no env today")

    served.app.state.pool.make_env = broken
    with served.ws() as ws:
        error = json.loads(ws.recv(timeout=30))["data"]
        assert error["code"] == "FACTORY_ERROR" and "no env today" in error["message"]
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=30)


def test_an_env_that_fails_to_reset_is_execution_error(serve: Any) -> None:
    served = serve()
    make_env = served.app.state.pool.make_env

    def failing() -> Any:
        env = make_env()

        async def areset(**kwargs: Any) -> Any:
            raise taskgym.SandboxError("the sandbox would not start")

        env.areset = areset
        return env

    served.app.state.pool.make_env = failing
    with served.ws() as ws:
        error = send(ws, {"type": "reset", "data": {}})["data"]
        assert error["code"] == "EXECUTION_ERROR" and "would not start" in error["message"]
        assert send(ws, {"type": "state"})["type"] == "state"  # the session goes on


def test_capacity_reached_then_freed(serve: Any) -> None:
    served = serve(max_sessions=1)
    with served.ws() as first:
        send(first, {"type": "reset", "data": {}})
        with served.ws() as second:
            error = json.loads(second.recv(timeout=30))["data"]
            assert error["code"] == "CAPACITY_REACHED" and error["max_sessions"] == 1
            assert "limit of 1 sessions" in error["message"]
    deadline = time.monotonic() + 30  # the place is free once the first's sandbox is stopped
    while served.app.state.pool.sessions and time.monotonic() < deadline:
        time.sleep(0.05)
    with served.ws() as third:
        assert send(third, {"type": "state"})["type"] == "state"


def test_back_pressure_on_sandbox_starts(serve: Any) -> None:
    """With the one start slot held by a reset that waits, another session's reset is refused
    with CAPACITY_REACHED after start_wait, and that session goes on."""
    served = serve(max_starting=1, start_wait=0.5)
    make_env = served.app.state.pool.make_env
    entered, release = threading.Event(), threading.Event()

    def first_waits() -> Any:  # the first reset of all (one event loop: no race) waits
        env = make_env()
        real = env.areset

        async def areset(**kwargs: Any) -> Any:
            if not entered.is_set():
                entered.set()
                while not release.is_set():
                    await asyncio.sleep(0.01)
            return await real(**kwargs)

        env.areset = areset
        return env

    served.app.state.pool.make_env = first_waits
    with served.ws() as first, served.ws() as second:
        first.send(json.dumps({"type": "reset", "data": {}}))
        assert entered.wait(timeout=60)  # the first reset holds the only slot
        refused = send(second, {"type": "reset", "data": {}})["data"]
        assert refused["code"] == "CAPACITY_REACHED"
        assert "1 sandboxes are starting already" in refused["message"]
        release.set()
        assert json.loads(first.recv(timeout=60))["type"] == "observation"
        assert send(second, {"type": "reset", "data": {}})["type"] == "observation"


def test_per_client_limit(serve: Any) -> None:
    served = serve(max_sessions=4, max_sessions_per_client=1)
    with served.ws() as first:
        send(first, {"type": "state"})
        with served.ws() as second:
            error = json.loads(second.recv(timeout=30))["data"]
            assert error["code"] == "CAPACITY_REACHED" and "per client" in error["message"]


def test_idle_timeout_closes_the_session_and_its_sandbox(serve: Any) -> None:
    served = serve(idle_timeout=1.0)
    before = host_state()
    with served.ws() as ws:
        send(ws, {"type": "reset", "data": {}})
        assert host_state() - before, "a reset starts a sandbox"
        error = json.loads(ws.recv(timeout=30))["data"]
        assert error["code"] == "SESSION_ERROR" and "no message for 1 s" in error["message"]
        with pytest.raises(ConnectionClosed):
            ws.recv(timeout=30)
    assert wait_for_no_sandbox(before) == set()
    assert served.app.state.pool.sessions == {}


@pytest.mark.parametrize("how", ["between steps", "during a step"])
def test_a_client_that_goes_away_leaves_no_sandbox(serve: Any, how: str) -> None:
    served = serve()
    before = host_state()
    ws = served.ws().__enter__()  # never left: the client does not say goodbye
    send(ws, {"type": "reset", "data": {}})
    send(ws, {"type": "step", "data": SOLVE})
    if how == "during a step":
        ws.send(json.dumps({"type": "step", "data": {"tool": "bash",
                                                     "args": {"command": "sleep 2"}}}))
    ws.socket.close()  # no close message, no closing handshake: the client just vanishes
    assert wait_for_no_sandbox(before) == set()
    assert served.app.state.pool.sessions == {}


@pytest.mark.hacks
def test_a_fake_reward_file_through_the_server_scores_0(serve: Any) -> None:
    with serve().ws() as ws:
        send(ws, {"type": "reset", "data": {}})
        send(ws, {"type": "step", "data": {"tool": "bash", "args": {"command":
             "mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; "
             "echo '{\"reward\": 1}' > /logs/verifier/reward.json; echo 1 > /tmp/reward.txt"}}})
        end = send(ws, {"type": "step", "data": SUBMIT})["data"]
        assert (end["reward"], end["done"]) == (0.0, True)
        assert end["metadata"]["reward"]["success"] is False


def test_garbage_never_kills_the_server(serve: Any) -> None:
    served = serve()
    rng = random.Random(2026)
    pieces = ['{"type":', '"step"', '"reset"', '"data"', "null", "[", "]", "{", "}", ",", ":",
              '"tool"', '"args"', "1e999", '"\\ud800"', "\x00", "true", '"close"']
    with served.ws() as ws:
        for _ in range(200):
            text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
            if text.strip() in ('{"type":"close"}',):
                continue
            answer = send(ws, text)
            assert answer["type"] in ("error", "observation", "state"), answer
    assert served.http(f"{served.url}/health") == (200, {"status": "healthy"})
    with served.ws() as ws:
        send(ws, {"type": "reset", "data": {}})
        send(ws, {"type": "step", "data": SOLVE})
        assert send(ws, {"type": "step", "data": SUBMIT})["data"]["reward"] == 1.0


def test_http_routes_and_the_refused_stateless_ones(serve: Any) -> None:
    served = serve()
    status, schema = served.http(f"{served.url}/schema")
    assert status == 200 and set(schema) == {"action", "observation", "state"}
    titles = [option["title"] for option in schema["action"]["anyOf"]]
    assert {"tool bash", "tool submit", "call_tool", "list_tools"} <= set(titles)
    status, metadata = served.http(f"{served.url}/metadata")
    assert status == 200 and metadata["name"] == "coding-terminal-v0"
    for route in ("/reset", "/step"):
        request = urllib.request.Request(f"{served.url}{route}", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        assert refused.value.code == 404
        assert "Open a session on the /ws WebSocket" in json.loads(refused.value.read())["detail"]


def test_a_token_guards_every_route_but_health(serve: Any) -> None:
    served = serve(token="s3cret")
    assert served.http(f"{served.url}/health")[0] == 200
    assert served.http(f"{served.url}/schema")[0] == 401
    assert served.http(f"{served.url}/schema", Authorization="Bearer wrong")[0] == 401
    assert served.http(f"{served.url}/schema", Authorization="Bearer s3cret")[0] == 200
    with pytest.raises(InvalidStatus):
        served.ws()
    with served.ws(Authorization="Bearer s3cret") as ws:
        assert send(ws, {"type": "state"})["type"] == "state"


@pytest.mark.docker
@pytest.mark.hacks
def test_on_docker_an_episode_scores_1_and_a_fake_reward_file_0(serve: Any,
                                                                docker_backend: Any) -> None:
    served = serve(sandbox=docker_backend)
    with served.ws() as ws:
        send(ws, {"type": "reset", "data": {}})
        send(ws, {"type": "step", "data": SOLVE})
        assert send(ws, {"type": "step", "data": SUBMIT})["data"]["reward"] == 1.0
        send(ws, {"type": "reset", "data": {}})
        send(ws, {"type": "step", "data": {"tool": "bash", "args": {"command":
             "mkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt; echo 1 > /tmp/reward.txt"}}})
        end = send(ws, {"type": "step", "data": SUBMIT})["data"]
        assert (end["reward"], end["done"]) == (0.0, True)
