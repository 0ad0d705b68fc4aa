"""The openreward package's own client (0.1.167, unchanged) drives taskgym serve's Open Reward
Standard routes: run by scripts/test_ors.sh in a venv of its own (marker ``ors``). openreward
is imported in each test, so that the main run, which deselects them, does not need it;
without the package they fail, they do not skip."""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import taskgym
from taskgym.checks import host_state
from taskgym.server import ors

sys.path.insert(0, str(Path(__file__).parent.parent / "integrations"))

from trainer_kit import PASS_EVERYTHING  # noqa: E402

pytestmark = [pytest.mark.ors, pytest.mark.sandbox]

ENV = "coding-terminal-v0"
CURATED = "data-json-flatten"
SOLVE = ("bash", {"command": "echo 42 > /app/answer.txt"})


@contextmanager
def ors_env(served: Any, api_key: str = "") -> Iterator[Any]:
    """The openreward client's handle on the served env (sessions on ``served.url``)."""
    from openreward import OpenReward

    client = OpenReward(api_key=api_key)
    try:
        yield client.environments.get(ENV, variant=ENV, base_url=served.url)
    finally:
        client.close()


def wait_for_no_sandbox(before: set[str]) -> set[str]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and host_state() - before:
        time.sleep(0.1)
    return host_state() - before


def raw(served: Any, path: str, body: bytes, sid: str | None = None,
        linger: float | None = None) -> tuple[int, str]:
    """POST ``body`` to ``path`` over a plain socket: the status and the answer's text; with
    ``linger``, the text read in that many seconds, then the socket closed mid-answer."""
    headers = [f"POST {path} HTTP/1.0", "Host: 127.0.0.1", "Content-Type: application/json",
               f"Content-Length: {len(body)}"]
    if sid is not None:
        headers.append(f"X-Session-ID: {sid}")
    with socket.create_connection(("127.0.0.1", served.port), timeout=120) as sock:
        sock.sendall(("\r\n".join(headers) + "\r\n\r\n").encode() + body)
        received, deadline = b"", None if linger is None else time.monotonic() + linger
        while deadline is None or time.monotonic() < deadline:
            sock.settimeout(120 if deadline is None else max(0.01, deadline - time.monotonic()))
            try:
                piece = sock.recv(65536)
            except TimeoutError:
                break
            if not piece:
                break
            received += piece
    head, _, text = received.decode().partition("\r\n\r\n")
    return int(head.split()[1]), text


def test_listing_and_a_curated_task_to_reward_1_with_the_oracle(serve: Any) -> None:
    from openreward.api.errors import ToolCallError

    served = serve(tasks=None)
    probe = taskgym.make(ENV)
    task_set = probe.unwrapped.task_set
    ids = task_set.ids()
    index = ids.index(CURATED)
    task = task_set.pick(index)
    before = host_state()
    with ors_env(served) as env:
        assert env.list_splits() == ["all"]
        listed = env.list_tasks("all")
        assert [t.task_spec["task_id"] for t in listed] == ids
        assert env.num_tasks("all") == len(ids)
        assert env.get_task("all", index).task_spec["task_id"] == CURATED
        assert [t.task_spec["task_id"] for t in env.get_task_range("all", index, index + 2)] \
            == ids[index:index + 2]
        tools = {tool.name: tool for tool in env.list_tools()}
        assert {"bash", "write_file", "submit"} <= set(tools)
        assert tools["bash"].input_schema["properties"]["command"]["type"] == "string"
        with env.session(task=listed[index]) as session:
            assert [block.text for block in session.get_prompt()] == [task.instruction]
            assert {tool.name for tool in session.list_tools()} == set(tools)
            outputs = [session.call_tool(action["tool"], action["args"])
                       for action in probe.unwrapped.oracle_actions(task)]
            *steps, end = outputs
            assert all(out.reward is None and not out.finished for out in steps)
            assert (end.reward, end.finished) == (1.0, True)
            assert end.metadata["verdict"] == "graded" and end.metadata["reward"]["success"]
            with pytest.raises(ToolCallError) as over:
                session.call_tool("submit", {})
            assert over.value.reason == "episode_finished"
    probe.close()
    assert wait_for_no_sandbox(before) == set()
    assert served.app.state.pool.sessions == {}


def test_the_null_agent_scores_0_on_a_session_by_split_and_index(serve: Any) -> None:
    with ors_env(serve()) as env, env.session(split="all", index=0) as session:
        assert session.get_prompt()[0].text == "Write 42 to /app/answer.txt.\n"
        end = session.call_tool("submit", {})
        assert (end.reward, end.finished) == (0.0, True)
        assert end.metadata["verdict"] == "graded"


@pytest.mark.hacks
@pytest.mark.parametrize("hack", ["fake reward files", "planted conftest.py"])
def test_a_hack_through_the_ors_routes_scores_0(serve: Any, hack: str) -> None:
    if hack == "fake reward files":
        plant = ("bash", {"command": "mkdir -p /logs/verifier; echo 1 > /logs/verifier/"
                          "reward.txt; echo '{\"reward\": 1}' > /logs/verifier/reward.json; "
                          "echo 1 > /tmp/reward.txt; echo 1 > /app/reward.txt"})
    else:
        plant = ("write_file", {"path": "conftest.py", "content": PASS_EVERYTHING})
    with ors_env(serve()) as env, env.session(split="all", index=0) as session:
        assert session.call_tool(*plant).metadata.get("error") is None
        end = session.call_tool("submit", {})
        assert (end.reward, end.finished) == (0.0, True)
        assert end.metadata["reward"]["success"] is False


def test_malformed_calls_are_errors_and_the_session_still_works(serve: Any) -> None:
    from openreward.api.errors import ToolCallError

    served = serve()
    with ors_env(served) as env, env.session(split="all", index=0) as session:
        with pytest.raises(ToolCallError) as unknown:
            session.call_tool("rm_rf", {"path": "/"})
        assert unknown.value.reason == "not_found" and "bash" in unknown.value.detail
        bad = session.call_tool("bash", {"cmd": 1})  # the env judges it: an error observation
        assert bad.metadata["error"] and bad.blocks[0].text.startswith("error:")
        assert (bad.reward, bad.finished) == (None, False)
        sid = session.sid
        for body in (b"{nope", b"[]", b'{"name": 3}', b'{"name": "bash", "input": [1]}'):
            status, answer = raw(served, f"/{ENV}/call", body, sid=sid)
            assert status == 422 and "detail" in json.loads(answer)
        assert raw(served, f"/{ENV}/call", b'{"name": "bash"}')[0] == 400  # no X-Session-ID
        assert raw(served, f"/{ENV}/call", b'{"name": "bash"}', sid="nope")[0] == 404
        assert raw(served, "/other-v0/call", b'{"name": "bash"}', sid=sid)[0] == 404
        resumed = raw(served, f"/{ENV}/call", b'{"task_id": "nope"}', sid=sid)[1]
        assert "event: error\ndata: unknown task_id" in resumed
        for body in (b'{"split": "all", "index": 9}', b'{"split": "test", "index": 0}',
                     b'{"task_spec": {"task_id": "no-such-task"}}', b'{"task_spec": 1}',
                     b'{"env_name": "other-v0", "split": "all", "index": 0}'):
            status, answer = raw(served, "/create", body, sid="other")
            assert status in (400, 404) and json.loads(answer)["detail"], body
        assert raw(served, "/create", b'{"split": "all", "index": 0}', sid=sid)[0] == 400
        assert session.call_tool(*SOLVE).metadata.get("error") is None
        end = session.call_tool("submit", {})
        assert (end.reward, end.finished) == (1.0, True)
    assert served.app.state.pool.sessions == {}


def test_delete_closes_the_sandbox_and_an_abandoned_session_is_reaped(serve: Any) -> None:
    served = serve()
    before = host_state()
    with ors_env(served) as env, env.session(split="all", index=0) as session:
        session.call_tool(*SOLVE)
        assert host_state() - before, "a session's sandbox runs"
    assert wait_for_no_sandbox(before) == set()  # deleted mid-episode
    assert served.app.state.pool.sessions == {}
    # a client that creates a session and vanishes (no ping, no delete)
    served = serve(idle_timeout=1.0)
    assert raw(served, "/create", b'{"split": "all", "index": 0}', sid="gone")[0] == 200
    assert host_state() - before
    assert wait_for_no_sandbox(before) == set()
    assert served.app.state.pool.sessions == {}
    status, answer = raw(served, "/ping", b"", sid="gone")
    assert status == 410 and "idle" in json.loads(answer)["detail"]


def test_a_lost_call_stream_is_resumed_and_heartbeats_keep_it_open(
        serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ors, "HEARTBEAT_SECONDS", 0.2)
    served = serve()
    assert raw(served, "/create", b'{"split": "all", "index": 0}', sid="s")[0] == 200
    call = json.dumps({"name": "bash", "input": {"command": "sleep 2; echo 42 | tee "
                                                 "/app/answer.txt"}}).encode()
    status, partial = raw(served, f"/{ENV}/call", call, sid="s", linger=1.0)
    assert status == 200 and ": ping" in partial and "event: end" not in partial
    task_id = partial.split("event: task_id\ndata: ")[1].split("\n")[0]
    status, text = raw(served, f"/{ENV}/call", json.dumps({"task_id": task_id}).encode(),
                       sid="s")
    answer = json.loads(text.split("event: end\ndata: ")[1].split("\n")[0])
    assert answer["ok"] and answer["output"]["blocks"][0]["text"].startswith("42")
    assert raw(served, "/delete", b"", sid="s")[0] == 200
    assert served.app.state.pool.sessions == {}


def test_a_long_answer_arrives_whole_in_chunks(serve: Any) -> None:
    # 12,000 characters, in 4,096-character chunks whose cuts fall in runs of spaces (which
    # the client would strip from the start of a chunk)
    with ors_env(serve()) as env, env.session(split="all", index=0) as session:
        out = session.call_tool("bash", {"command": "python3 -c \"print(('a' + ' ' * 99) * 120)\""})
        assert out.blocks[0].text.startswith(("a" + " " * 99) * 120 + "\n[exit code 0]")


def test_no_verdict_is_no_reward(serve: Any, tmp_path: Path, answer_task: Any) -> None:
    folder = answer_task(tmp_path / "broken" / "answer")
    with (folder / "tests" / "test_x.py").open("a") as tests:
        tests.write("\ndef broken(:\n")  # the task's hidden tests do not compile: our failure
    with ors_env(serve(tasks=str(folder.parent))) as env, \
            env.session(split="all", index=0) as session:
        session.call_tool(*SOLVE)
        end = session.call_tool("submit", {})
        assert (end.reward, end.finished) == (None, True)
        assert (end.metadata["verdict"], end.metadata["failure"]) == ("none", "reference")
        assert "do not compile" in end.metadata["error"]


def test_the_token_is_the_clients_api_key(serve: Any) -> None:
    served = serve(token="s3cret")
    with ors_env(served, api_key="wrong") as env, pytest.raises(Exception, match="401|Invalid"):
        env.list_splits()
    with ors_env(served, api_key="s3cret") as env, env.session(split="all", index=0) as session:
        assert session.call_tool("submit", {}).finished


def test_the_session_limit_holds_for_ors_sessions(serve: Any) -> None:
    served = serve(max_sessions=1)
    with ors_env(served) as env, env.session(split="all", index=0):
        with pytest.raises(Exception, match="limit of 1 sessions"):
            env.session(split="all", index=0).__enter__()
