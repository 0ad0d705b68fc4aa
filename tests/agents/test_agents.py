"""The built-in agents, and the OpenAI-compatible one against a fake server."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import Any

import pytest

import taskgym
from taskgym.agents import (
    NullAgent,
    OpenAIChatAgent,
    OracleAgent,
    RandomAgent,
    ScriptedAgent,
    make_agent,
)
from taskgym.agents.openai_chat import SYSTEM_PROMPT
from taskgym.core.tool import ToolCall, parse_action
from taskgym.errors import ConfigError
from taskgym.evaluation import run_episode

SUBMIT = {"tool": "submit", "args": {}}
NUDGE = "Call one of the tools (or submit when done)."


@pytest.fixture(scope="module")
def coding_env() -> Iterator[Any]:
    env = taskgym.make("coding-terminal-v0")  # creating it starts no sandbox
    yield env
    env.close()


# -- make_agent and the model-free agents ----------------------------------------------------


def test_make_agent_names(coding_env):
    assert isinstance(make_agent("oracle", coding_env), OracleAgent)
    assert isinstance(make_agent("null", coding_env), NullAgent)
    assert isinstance(make_agent("random", coding_env, seed=3), RandomAgent)
    scripted = make_agent("scripted", coding_env, actions=[{"tool": "bash"}])
    assert isinstance(scripted, ScriptedAgent) and scripted.actions == [{"tool": "bash"}]
    openai = make_agent("openai", coding_env, base_url="http://127.0.0.1:9/v1", model="m")
    assert isinstance(openai, OpenAIChatAgent)
    assert (openai.base_url, openai.model) == ("http://127.0.0.1:9/v1", "m")
    assert [make_agent(n, coding_env).name for n in ("oracle", "null", "random")] == [
        "oracle", "null", "random"]


def test_make_agent_errors(coding_env):
    with pytest.raises(ConfigError, match=r"the scripted agent needs actions=\[\.\.\.\]"):
        make_agent("scripted", coding_env)
    with pytest.raises(ConfigError) as info:
        make_agent("gpt", coding_env)
    assert str(info.value) == (
        "unknown agent 'gpt'; choose oracle, null, random, scripted or openai")


def test_null_agent_submits():
    assert NullAgent().act({"text": "x"}, {"step": 0}) == SUBMIT
    assert NullAgent().act({"text": "x"}, {"step": 9}) == SUBMIT


def test_scripted_agent_order_and_reset():
    a1, a2 = {"tool": "bash", "args": {"command": "one"}}, "raw text action"
    agent = ScriptedAgent(iter([a1, a2]))
    played = [agent.act({"text": ""}, {"step": s}) for s in range(4)]
    assert played == [a1, a2, SUBMIT, SUBMIT]
    # a new episode (step 0) starts the script again, even mid-script
    assert agent.act({"text": ""}, {"step": 0}) == a1
    assert agent.act({"text": ""}, {"step": 0}) == a1
    assert agent.act({"text": ""}, {"step": 1}) == a2


def test_oracle_agent_replays_oracle_actions():
    calls: list[Any] = []
    plans = {"t1": [{"tool": "bash", "args": {"command": "fix"}}, {"tool": "noop"}],
             "t2": [{"tool": "bash", "args": {"command": "other"}}]}

    def oracle_actions(task: str) -> list[dict[str, Any]]:
        calls.append(task)
        return plans[task]

    base = SimpleNamespace(task="t1", oracle_actions=oracle_actions)
    agent = OracleAgent(SimpleNamespace(unwrapped=base))  # type: ignore[arg-type]
    played = [agent.act({"text": ""}, {"step": s}) for s in range(4)]
    assert played == [plans["t1"][0], plans["t1"][1], SUBMIT, SUBMIT]
    assert calls == ["t1"]
    base.task = "t2"
    assert agent.act({"text": ""}, {"step": 0}) == plans["t2"][0]
    assert agent.act({"text": ""}, {"step": 1}) == SUBMIT
    assert calls == ["t1", "t2"]
    assert plans["t1"] == [{"tool": "bash", "args": {"command": "fix"}}, {"tool": "noop"}]


def test_oracle_agent_on_the_coding_env(coding_env):
    base = coding_env.unwrapped
    base.task = base.task_set.get("py-fix-memo-leak")
    try:
        agent = OracleAgent(coding_env)
        first = agent.act({"text": ""}, {"step": 0})
        assert first == base.oracle_actions(base.task)[0]
        assert first["tool"] == "bash" and "/solution/solve.sh" in first["args"]["command"]
        assert agent.act({"text": ""}, {"step": 1}) == SUBMIT
    finally:
        base.task = None


def test_random_agent_actions_are_contained(coding_env):
    agent = RandomAgent(coding_env, seed=11)
    tools = {t.name: t for t in coding_env.unwrapped.tools}
    actions = [agent.act({"text": ""}, {"step": i}) for i in range(200)]
    for action in actions:
        assert coding_env.action_space.contains(action)
        assert isinstance(parse_action(action, tools), ToolCall)
    assert {a["tool"] for a in actions} == {"bash", "read_file", "write_file", "submit"}
    again = RandomAgent(coding_env, seed=11)
    assert [again.act({"text": ""}, {"step": i}) for i in range(200)] == actions


# -- a fake OpenAI-compatible server ---------------------------------------------------------


def tool_call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)}}


def reply(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = list(calls)
    return {"id": "chatcmpl-1", "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}]}


class FakeServer:
    """Answers POST /v1/chat/completions with queued replies and records every request."""

    def __init__(self) -> None:
        self.replies: list[Any] = []
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append({"path": self.path, "body": body,
                                       "auth": self.headers.get("Authorization")})
                answer = owner.replies.pop(0) if owner.replies else reply(
                    tool_call("call_end", "submit", {}))
                status, raw = 200, b""
                if isinstance(answer, tuple):  # (status, raw bytes) or ("sleep", seconds)
                    if answer[0] == "sleep":
                        time.sleep(answer[1])
                        answer = reply(content="late")
                    else:
                        status, raw = answer
                if not raw:
                    raw = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:  # the client gave up waiting (the slow-server test)
                    pass

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={
            "poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture()
def server() -> Iterator[FakeServer]:
    fake = FakeServer()
    try:
        yield fake
    finally:
        fake.close()


@pytest.fixture()
def no_openai_env(monkeypatch) -> None:
    for name in ("OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture()
def tools_spec(coding_env) -> list[dict[str, Any]]:
    return [t.openai() for t in coding_env.unwrapped.tools]


def test_openai_sends_tools_and_returns_the_tool_call(server, tools_spec, coding_env,
                                                      no_openai_env):
    bash = tool_call("call_1", "bash", {"command": "ls /app"})
    server.replies = [reply(bash)]
    agent = OpenAIChatAgent(base_url=server.url + "/", model="test-model", api_key="sk-test",
                            temperature=0.3, max_tokens=77)
    action = agent.act({"text": "Fix the bug."}, {"step": 0, "tools": tools_spec})
    assert action == bash
    call = parse_action(action, {t.name: t for t in coding_env.unwrapped.tools})
    assert isinstance(call, ToolCall)
    assert (call.tool.name, call.args.command, call.call_id) == ("bash", "ls /app", "call_1")
    [request] = server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["auth"] == "Bearer sk-test"
    body = request["body"]
    assert body["model"] == "test-model"
    assert body["tools"] == tools_spec
    assert [t["function"]["name"] for t in body["tools"]] == [
        "bash", "read_file", "write_file", "submit"]
    assert body["messages"] == [{"role": "system", "content": SYSTEM_PROMPT},
                                {"role": "user", "content": "Fix the bug."}]
    assert (body["temperature"], body["max_tokens"]) == (0.3, 77)


def test_openai_sends_the_tool_result_back(server, tools_spec, no_openai_env):
    bash = tool_call("call_A1", "bash", {"command": "echo hi"})
    submit = tool_call("call_B2", "submit", {})
    server.replies = [reply(bash), reply(submit)]
    agent = OpenAIChatAgent(base_url=server.url, model="m")
    assert agent.act({"text": "task"}, {"step": 0, "tools": tools_spec}) == bash
    assert agent.act({"text": "hi\n[exit code 0]"}, {"step": 1}) == submit
    second = server.requests[1]["body"]["messages"]
    assert second[2] == {"role": "assistant", "content": None, "tool_calls": [bash]}
    assert second[3] == {"role": "tool", "tool_call_id": "call_A1",
                         "content": "hi\n[exit code 0]"}
    assert len(second) == 4
    assert server.requests[0]["auth"] is None  # no key, no header


@pytest.mark.parametrize("images", [True, False])
def test_openai_forwards_tool_images_when_asked(server, tools_spec, no_openai_env,
                                                images: bool):
    render = tool_call("call_R", "bash", {"command": "true"})
    server.replies = [reply(render), reply(tool_call("call_S", "submit", {}))]
    agent = OpenAIChatAgent(base_url=server.url, model="m", images=images)
    agent.act({"text": "task"}, {"step": 0, "tools": tools_spec})
    pngs = [b"\x89PNG first", b"\x89PNG second"]
    agent.act({"text": "rendered"}, {"step": 1, "images": pngs})
    messages = server.requests[1]["body"]["messages"]
    assert messages[3] == {"role": "tool", "tool_call_id": "call_R", "content": "rendered"}
    if not images:
        assert len(messages) == 4  # a text-only model is never sent an image
        return
    [follow] = messages[4:]
    assert follow["role"] == "user" and follow["content"][0]["type"] == "text"
    urls = [part["image_url"]["url"] for part in follow["content"][1:]]
    assert [base64.b64decode(u.removeprefix("data:image/png;base64,")) for u in urls] == pngs


def test_openai_asks_again_when_no_tool_is_called(server, tools_spec, no_openai_env):
    bash = tool_call("call_2", "bash", {"command": "pwd"})
    server.replies = [reply(content="Let me think about it."), reply(bash)]
    agent = OpenAIChatAgent(base_url=server.url, model="m")
    assert agent.act({"text": "task"}, {"step": 0, "tools": tools_spec}) == bash
    assert len(server.requests) == 2
    messages = server.requests[1]["body"]["messages"]
    assert messages[2:] == [{"role": "assistant", "content": "Let me think about it."},
                            {"role": "user", "content": NUDGE}]
    # the tool result of the next step goes to the call that was finally made
    agent.act({"text": "/app"}, {"step": 1})
    assert server.requests[2]["body"]["messages"][-1] == {
        "role": "tool", "tool_call_id": "call_2", "content": "/app"}


def test_openai_submits_after_three_replies_without_tools(server, tools_spec, no_openai_env):
    server.replies = [reply(content=f"chat {i}") for i in range(3)]
    agent = OpenAIChatAgent(base_url=server.url, model="m")
    assert agent.act({"text": "task"}, {"step": 0, "tools": tools_spec}) == SUBMIT
    assert len(server.requests) == 3
    # nothing pending: the next observation is not sent as a tool message
    server.replies = [reply(tool_call("c9", "submit", {}))]
    agent.act({"text": "submitted"}, {"step": 1})
    assert all(m["role"] != "tool" for m in server.requests[3]["body"]["messages"])


def test_openai_multiple_tool_calls_runs_the_first(server, tools_spec, no_openai_env):
    first = tool_call("call_1", "bash", {"command": "ls"})
    extra = tool_call("call_2", "read_file", {"path": "x"})
    server.replies = [reply(first, extra), reply(tool_call("call_3", "submit", {}))]
    agent = OpenAIChatAgent(base_url=server.url, model="m")
    assert agent.act({"text": "task"}, {"step": 0, "tools": tools_spec}) == first
    agent.act({"text": "files"}, {"step": 1})
    messages = server.requests[1]["body"]["messages"]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    assert tool_messages == [
        {"role": "tool", "tool_call_id": "call_2", "content": "not run: one tool call per turn"},
        {"role": "tool", "tool_call_id": "call_1", "content": "files"}]
    assert messages[2]["tool_calls"] == [first, extra]


def test_openai_new_episode_resets_the_conversation(server, tools_spec, no_openai_env):
    server.replies = [reply(tool_call("a", "bash", {"command": "x"})),
                      reply(tool_call("b", "bash", {"command": "y"}))]
    agent = OpenAIChatAgent(base_url=server.url, model="m")
    agent.act({"text": "task one"}, {"step": 0, "tools": tools_spec})
    agent.act({"text": "task two"}, {"step": 0, "tools": tools_spec[:1]})
    body = server.requests[1]["body"]
    assert body["messages"] == [{"role": "system", "content": SYSTEM_PROMPT},
                                {"role": "user", "content": "task two"}]
    assert body["tools"] == tools_spec[:1]


def test_openai_reads_the_environment(server, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", "env-key")
    agent = OpenAIChatAgent()
    assert (agent.base_url, agent.model, agent.api_key) == (server.url, "env-model", "env-key")
    agent.act({"text": "t"}, {"step": 0, "tools": []})
    assert server.requests[0]["auth"] == "Bearer env-key"
    assert server.requests[0]["body"]["model"] == "env-model"


@pytest.mark.parametrize("kwargs", [{}, {"base_url": "http://127.0.0.1:1/v1"}, {"model": "m"},
                                    {"base_url": "", "model": "m"}])
def test_openai_needs_base_url_and_model(no_openai_env, kwargs):
    with pytest.raises(ConfigError) as info:
        OpenAIChatAgent(**kwargs)
    assert str(info.value) == (
        "the openai agent needs base_url and model (or OPENAI_BASE_URL and OPENAI_MODEL), "
        "e.g. --base-url http://127.0.0.1:8000/v1")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_openai_server_down(no_openai_env):
    url = f"http://127.0.0.1:{_free_port()}/v1"
    agent = OpenAIChatAgent(base_url=url, model="m", timeout=5)
    with pytest.raises(ConfigError) as info:
        agent.act({"text": "t"}, {"step": 0, "tools": []})
    assert str(info.value).startswith(f"the model server at {url} did not answer: ")
    assert "Connection refused" in str(info.value)


def test_openai_http_error(server, no_openai_env):
    server.replies = [(500, b'{"error": "overloaded"}')]
    agent = OpenAIChatAgent(base_url=server.url, model="m")
    with pytest.raises(ConfigError, match=r"did not answer: HTTP Error 500"):
        agent.act({"text": "t"}, {"step": 0, "tools": []})


def test_openai_unexpected_reply(server, no_openai_env):
    server.replies = [{"error": {"message": "model not found"}}]
    agent = OpenAIChatAgent(base_url=server.url, model="m")
    with pytest.raises(ConfigError) as info:
        agent.act({"text": "t"}, {"step": 0, "tools": []})
    assert str(info.value) == (f"unexpected reply from {server.url}: "
                               "{'error': {'message': 'model not found'}}")


def test_openai_non_json_reply(server, no_openai_env):
    server.replies = [(200, b"<html>502 Bad Gateway</html>")]
    agent = OpenAIChatAgent(base_url=server.url, model="m")
    with pytest.raises(ConfigError, match="sent a reply that is not JSON"):
        agent.act({"text": "t"}, {"step": 0, "tools": []})


def test_openai_server_too_slow(server, no_openai_env):
    server.replies = [("sleep", 1.5)]
    agent = OpenAIChatAgent(base_url=server.url, model="m", timeout=0.3)
    with pytest.raises(ConfigError, match="did not answer"):
        agent.act({"text": "t"}, {"step": 0, "tools": []})


# -- a real episode ------------------------------------------------------------------------


@pytest.mark.sandbox
def test_openai_agent_drives_a_real_episode(server, tmp_path, no_openai_env, answer_task):
    task = answer_task(tmp_path / "answer-task", max_steps=6)
    server.replies = [
        reply(tool_call("call_1", "bash", {"command": "cat notes.txt; echo 42 > answer.txt"})),
        reply(tool_call("call_2", "submit", {})),
    ]
    env = taskgym.make("coding-terminal-v0", tasks=str(task))
    try:
        agent = OpenAIChatAgent(base_url=server.url, model="m")
        record = run_episode(env, agent, task_id="answer-task")
    finally:
        env.close()
    assert (record.score, record.success, record.steps, record.step_errors) == (1.0, True, 2, 0)
    assert record.agent == "openai"
    assert len(server.requests) == 2
    first = server.requests[0]["body"]
    assert first["messages"][1]["content"] == "Write 42 to /app/answer.txt.\n"
    assert [t["function"]["name"] for t in first["tools"]] == [
        "bash", "read_file", "write_file", "submit"]
    result = server.requests[1]["body"]["messages"][-1]
    assert result["role"] == "tool" and result["tool_call_id"] == "call_1"
    assert result["content"] == "the answer goes in answer.txt\n[exit code 0]"
