"""OpenEnv's /mcp JSON-RPC routes of taskgym serve, spoken by hand: sessions made over HTTP,
a WebSocket attached to one with /ws?session_id=, the reaper of idle ones."""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from websockets.sync.client import connect

from taskgym.checks import host_state

pytestmark = [pytest.mark.sandbox]


def rpc(url: str, method: str, request_id: Any = 1, **params: Any) -> dict[str, Any]:
    body = json.dumps({"jsonrpc": "2.0", "method": method, "params": params, "id": request_id})
    return post(f"{url}/mcp", body.encode())


def post(url: str, body: bytes) -> dict[str, Any]:
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        answer: dict[str, Any] = json.loads(response.read())
        return answer


def ws_send(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(message))
    answer: dict[str, Any] = json.loads(ws.recv(timeout=120))
    return answer


def test_a_session_over_http_with_an_attached_socket_to_reward_1(serve: Any) -> None:
    served = serve()
    before = host_state()
    session_id = rpc(served.url, "openenv/session/create")["result"]["session_id"]
    tools = rpc(served.url, "tools/list", session_id=session_id)["result"]["tools"]
    assert {"bash", "submit"} <= {tool["name"] for tool in tools}
    with connect(f"ws://127.0.0.1:{served.port}/ws?session_id={session_id}") as ws:
        assert ws_send(ws, {"type": "reset", "data": {}})["data"]["done"] is False
        with connect(f"ws://127.0.0.1:{served.port}/ws?session_id={session_id}") as second:
            refused = json.loads(second.recv(timeout=30))["data"]
            assert refused["code"] == "SESSION_ERROR" and "already has" in refused["message"]
        ran = rpc(served.url, "tools/call", 2, session_id=session_id, name="bash",
                  arguments={"command": "echo 42 > /app/answer.txt"})
        assert ran["id"] == 2 and ran["result"]["tool_name"] == "bash"
        over_ws = ws_send(ws, {"type": "mcp", "data": {"jsonrpc": "2.0", "method": "tools/call",
                                                       "params": {"name": "submit"}, "id": 3}})
        assert over_ws["type"] == "mcp"
        assert (over_ws["data"]["result"]["reward"], over_ws["data"]["result"]["done"]) == (1.0, True)
        assert ws_send(ws, {"type": "state"})["data"]["step_count"] == 2
    # the socket was attached: the session lives on until closed over /mcp
    assert session_id in served.app.state.pool.sessions
    closed = rpc(served.url, "openenv/session/close", session_id=session_id)
    assert closed["result"] == {"session_id": session_id, "closed": True}
    assert served.app.state.pool.sessions == {}
    assert host_state() - before == set()


def test_json_rpc_errors(serve: Any) -> None:
    served = serve()
    assert post(f"{served.url}/mcp", b"{nope")["error"]["code"] == -32700
    assert post(f"{served.url}/mcp", b"[1]")["error"]["code"] == -32600
    assert rpc(served.url, "initialize")["error"]["code"] == -32601
    unknown = rpc(served.url, "tools/call", name="bash", session_id="nope")
    assert unknown["error"]["code"] == -32602 and "Unknown session_id" in unknown["error"]["message"]
    # without a session a tool call is refused: a fresh env per call never reaches a grade
    assert rpc(served.url, "tools/call", name="bash")["error"]["code"] == -32602
    session_id = rpc(served.url, "openenv/session/create")["result"]["session_id"]
    assert rpc(served.url, "tools/call", session_id=session_id)["error"]["code"] == -32602
    with connect(f"ws://127.0.0.1:{served.port}/ws?session_id=missing") as ws:
        assert json.loads(ws.recv(timeout=30))["data"]["code"] == "SESSION_ERROR"
    rpc(served.url, "openenv/session/close", session_id=session_id)


def test_an_idle_http_session_is_reaped_with_its_sandbox(serve: Any) -> None:
    served = serve(idle_timeout=1.0)
    before = host_state()
    session_id = rpc(served.url, "openenv/session/create")["result"]["session_id"]
    with connect(f"ws://127.0.0.1:{served.port}/ws?session_id={session_id}") as ws:
        ws_send(ws, {"type": "reset", "data": {}})
        assert host_state() - before
    deadline = time.monotonic() + 30
    while served.app.state.pool.sessions and time.monotonic() < deadline:
        time.sleep(0.1)
    assert served.app.state.pool.sessions == {}
    assert host_state() - before == set()
