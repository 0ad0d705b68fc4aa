"""OpenEnv's ``/mcp`` routes: plain JSON-RPC 2.0 (no ``initialize``), as OpenEnv 0.10 serves.

Methods: ``openenv/session/create`` (a session with no socket, for ``/ws?session_id=`` to
attach to) → ``{"session_id"}``; ``openenv/session/close {session_id}``; ``tools/list`` →
``{"tools": [{name, description, input_schema}]}``; ``tools/call {name, arguments,
session_id?}`` → a ``CallToolObservation`` (``tool_name``, ``result``, ``error``, ``reward``,
``done``, ``metadata``). A tool call runs as a step of the named session (over a WebSocket:
of the socket's own session); without one it is refused, since a fresh env per call could
never reach a graded end.
"""

from __future__ import annotations

from typing import Any

from taskgym.core.tool import Tool
from taskgym.server.protocol import call_tool_fields, mcp_tool
from taskgym.server.sessions import CapacityError, Session, SessionPool

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = (
    -32700, -32600, -32601, -32602, -32603)


def rpc_error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": request_id}


def rpc_result(result: Any, request_id: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "result": result, "id": request_id}


async def handle(request: Any, pool: SessionPool, tools: list[Tool], client: str,
                 session: Session | None = None) -> dict[str, Any]:
    """The JSON-RPC answer to ``request`` (already parsed JSON); never raises."""
    if not isinstance(request, dict) or request.get("jsonrpc") != "2.0" \
            or not isinstance(request.get("method"), str):
        return rpc_error(INVALID_REQUEST, "a JSON-RPC 2.0 request: "
                         '{"jsonrpc": "2.0", "method": ..., "params": {...}, "id": ...}',
                         request.get("id") if isinstance(request, dict) else None)
    method, request_id = request["method"], request.get("id")
    params = request.get("params") or {}
    if not isinstance(params, dict):
        return rpc_error(INVALID_PARAMS, "params must be an object", request_id)
    try:
        if method == "openenv/session/create":
            created = await pool.open(client)
            return rpc_result({"session_id": created.id}, request_id)
        if method == "tools/list":
            return rpc_result({"tools": [mcp_tool(tool) for tool in tools]}, request_id)
        if method not in ("openenv/session/close", "tools/call"):
            return rpc_error(METHOD_NOT_FOUND, f"Method not found: {str(method)[:100]}; known: "
                             "tools/list, tools/call, openenv/session/create, "
                             "openenv/session/close", request_id)
        target = session
        if target is None:
            wanted = params.get("session_id")
            target = pool.sessions.get(wanted) if isinstance(wanted, str) else None
            if target is None:
                return rpc_error(INVALID_PARAMS, f"Unknown session_id: {str(wanted)[:100]}; "
                                 "create one with openenv/session/create", request_id)
        if method == "openenv/session/close":
            await target.close()
            return rpc_result({"session_id": target.id, "closed": True}, request_id)
        name = params.get("name")
        if not isinstance(name, str) or not name:
            return rpc_error(INVALID_PARAMS, "Missing 'name' in params", request_id)
        data = {"type": "call_tool", "tool_name": name, "arguments": params.get("arguments", {})}
        payload = await target.step({"tool": name, "args": data["arguments"]})
        call_tool_fields(data, payload)
        result = {**payload["observation"], "reward": payload["reward"], "done": payload["done"]}
        return rpc_result(result, request_id)
    except CapacityError as exc:
        return rpc_error(INTERNAL_ERROR, f"CAPACITY_REACHED: {exc}", request_id)
    except Exception as exc:
        return rpc_error(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}", request_id)
