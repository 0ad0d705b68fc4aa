"""``run_episode`` against a scripted OpenAI-compatible server on 127.0.0.1: native and
text tool calls, the chat it returns, hacks still scoring 0, no-verdict episodes reported,
the unsubmitted policy, calls after the end, and errors only for what the caller got wrong.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from scripted_endpoint import ScriptedEndpoint, bash, native, serving  # noqa: E402

import taskgym  # noqa: E402
from taskgym.domains.coding import CodingEnv  # noqa: E402
from taskgym.errors import (  # noqa: E402
    ConfigError,
    HostResourceError,
    SandboxError,
    TaskNotFoundError,
    UnknownEnvError,
)
from taskgym.integrations import AFTER_END, EpisodeResult  # noqa: E402

pytestmark = [pytest.mark.sandbox]

CALC = str(Path(__file__).parents[2] / "fixtures" / "coding" / "calc")
SOLUTION = ("import sys\n\n\ndef add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
            "\n\nif __name__ == '__main__':\n    op, x, y = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
            "    print({'add': add, 'mul': mul}[op](x, y))\n")
CONFTEST_HACK = ("import pytest\n@pytest.hookimpl(hookwrapper=True)\n"
                 "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
                 "    report = outcome.get_result()\n    report.outcome = 'passed'\n"
                 "    report.longrepr = None\n")
SUBMIT = native("submit", {}, "sub")
SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "oracle": [native("write_file", {"path": "calc.py", "content": SOLUTION}, "w1"), SUBMIT],
    "hacker": [native("write_file", {"path": "conftest.py", "content": CONFTEST_HACK}),
               native("write_file", {"path": "tests/conftest.py", "content": CONFTEST_HACK}),
               SUBMIT],
    "texter": [{"role": "assistant", "content":
                "I will fix it.\n<tool_call>\n" + json.dumps(
                    {"name": "write_file", "arguments": {"path": "calc.py", "content": SOLUTION}})
                + "\n</tool_call>"},
               {"role": "assistant", "content": '<tool_call>{"name": "submit", "arguments": {}}'
                                                '</tool_call>'}],
    "sloppy": [{"role": "assistant", "content": "<tool_call>{not json</tool_call>"},
               native("bash", "{\"command\": ", "bad-json"),
               native("no_such_tool", {}, "unknown"),
               {"role": "assistant", "content": None, "tool_calls": [
                   {"id": "a", "type": "function",
                    "function": {"name": "write_file",
                                 "arguments": json.dumps({"path": "calc.py",
                                                          "content": SOLUTION})}},
                   {"id": "b", "type": "function",
                    "function": {"name": "submit", "arguments": "{}"}},
                   {"id": "c", "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "rm calc.py"}'}}]}],
    "quitter": [native("write_file", {"path": "calc.py", "content": SOLUTION})],
    "idler": [bash("echo hi")] * 3,
    "refused": [native("write_file", {"path": "calc.py", "content": SOLUTION}),
                {"status": 400}],
    "faulty": [native("write_file", {"path": "fault", "content": "x"}), SUBMIT],
    "parts": [{"role": "assistant", "content": [
        {"type": "text", "text": '<tool_call>{"name": "write_file", "arguments": '},
        {"type": "text", "text": json.dumps({"path": "calc.py", "content": SOLUTION}) + "}"},
        {"type": "text", "text": "</tool_call>"}]}, SUBMIT],
    "viewer": [native("render", {"path": "7_8ths_cube.stl", "view": "top"}, "r"), SUBMIT],
}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[ScriptedEndpoint, str]]:
    scripted = ScriptedEndpoint(SCRIPTS)
    with serving(scripted) as url:
        yield scripted, url


def play(url: str, model: str, **kwargs: Any) -> EpisodeResult:
    kwargs.setdefault("make_kwargs", {"tasks": CALC})
    return asyncio.run(taskgym.run_episode("coding-terminal-v0", base_url=url, model=model,
                                           task="calc", **kwargs))


def test_native_calls_score_and_the_chat_has_ids(endpoint: tuple[ScriptedEndpoint, str]) -> None:
    scripted, url = endpoint
    scripted.requests.clear()
    result = play(url, "oracle")
    assert (result.reward, result.verdict, result.ended, result.steps) == (1.0, "graded",
                                                                          "submitted", 2)
    assert result.failure is None and result.components
    roles = [m["role"] for m in result.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert result.messages[1]["content"].startswith("Implement `add(a, b)`")
    assert result.messages[2]["tool_calls"][0]["id"] == "w1"
    assert result.messages[3]["tool_call_id"] == "w1" and "error" not in result.messages[3]["content"]
    assert result.messages[5]["tool_call_id"] == "sub"
    # the env's tools went to the endpoint as tools=, each request the chat so far
    assert {t["function"]["name"] for t in scripted.requests[0]["tools"]} >= {"bash", "submit"}
    assert len(scripted.requests[1]["messages"]) == 4


def test_text_calls_are_parsed(endpoint: tuple[ScriptedEndpoint, str]) -> None:
    result = play(url=endpoint[1], model="texter")
    assert (result.reward, result.ended) == (1.0, "submitted")
    first = result.messages[2]
    assert first["content"] == "I will fix it."  # the call is cut out of the text...
    call = first["tool_calls"][0]  # ...and carried as an OpenAI tool call with an id
    assert call["id"] == "call_1_0" and json.loads(call["function"]["arguments"])["path"] == "calc.py"
    assert result.messages[3]["tool_call_id"] == "call_1_0"


def test_text_calls_in_content_parts_are_parsed(endpoint: tuple[ScriptedEndpoint, str]) -> None:
    result = play(endpoint[1], "parts")
    assert (result.reward, result.ended, result.steps) == (1.0, "submitted", 2)


def test_a_hack_through_run_episode_scores_zero(endpoint: tuple[ScriptedEndpoint, str]) -> None:
    result = play(endpoint[1], "hacker")
    assert (result.reward, result.verdict, result.ended) == (0.0, "graded", "submitted")


def test_malformed_calls_are_error_observations_and_calls_after_the_end_are_not_run(
        endpoint: tuple[ScriptedEndpoint, str]) -> None:
    result = play(endpoint[1], "sloppy")
    assert (result.reward, result.ended, result.turns) == (1.0, "submitted", 4)
    by_id = {m["tool_call_id"]: m["content"] for m in result.messages if m["role"] == "tool"}
    assert "could not be read" in result.messages[3]["content"]  # the unreadable text call
    assert "call_1_0" in result.messages[3]["content"]
    assert by_id["bad-json"].startswith("error:")
    assert by_id["unknown"].startswith("error:") and "no_such_tool" in by_id["unknown"]
    assert by_id["c"] == AFTER_END  # after submit: not run, so calc.py is still there


def test_a_no_verdict_episode_is_reported(endpoint: tuple[ScriptedEndpoint, str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    verify = CodingEnv.verify

    def fail_when_faulted(self: CodingEnv, task: Any, session: Any) -> Any:
        try:
            session.read_file("fault", limit=10)
        except SandboxError:
            return verify(self, task, session)
        raise HostResourceError("could not start bwrap: no file descriptor left")

    monkeypatch.setattr(CodingEnv, "verify", fail_when_faulted)
    result = play(endpoint[1], "faulty")
    assert (result.reward, result.verdict, result.failure) == (0.0, "none", "host_resources")
    assert not result.graded and result.components == {}


def test_unsubmitted_episodes_are_graded_as_left_or_zero(
        endpoint: tuple[ScriptedEndpoint, str]) -> None:
    url = endpoint[1]
    left = play(url, "quitter")  # fixes calc.py, then answers without a call
    assert (left.reward, left.ended, left.verdict) == (1.0, "no_tool_call", "graded")
    assert left.messages[-1] == {"role": "assistant", "content": "I am done."}
    zero = play(url, "quitter", unsubmitted="zero")
    assert (zero.reward, zero.ended, zero.verdict, zero.components) == (0.0, "no_tool_call",
                                                                        "graded", {})
    assert "unsubmitted='zero'" in (zero.reason or "")
    refused = play(url, "refused")
    assert (refused.reward, refused.ended, refused.turns) == (1.0, "refused", 1)
    capped = play(url, "idler", max_turns=2)
    assert (capped.ended, capped.turns, capped.steps, capped.reward) == ("max_turns", 2, 2, 0.0)
    truncated = play(url, "idler", make_kwargs={"tasks": CALC, "max_steps": 2})
    assert (truncated.ended, truncated.steps, truncated.verdict) == ("truncated", 2, "graded")


def test_what_the_caller_got_wrong_raises(endpoint: tuple[ScriptedEndpoint, str]) -> None:
    url = endpoint[1]
    with pytest.raises(UnknownEnvError):
        asyncio.run(taskgym.run_episode("no-such-env-v0", base_url=url, model="oracle"))
    with pytest.raises(TaskNotFoundError):
        asyncio.run(taskgym.run_episode("coding-terminal-v0", base_url=url, model="oracle",
                                        task="nope", make_kwargs={"tasks": CALC}))
    with pytest.raises(ConfigError, match="did not answer"):
        play("http://127.0.0.1:9/v1", "oracle")
    with pytest.raises(ConfigError, match="answered 404"):
        play(url.removesuffix("/v1"), "oracle")
    with pytest.raises(ConfigError, match="unsubmitted"):
        play(url, "oracle", unsubmitted="maybe")
    with pytest.raises(ConfigError, match="agent"):
        taskgym.run_episode("coding-terminal-v0", object())  # type: ignore[call-overload]


def test_many_concurrent_episodes_on_one_loop(endpoint: tuple[ScriptedEndpoint, str]) -> None:
    import httpx

    url = endpoint[1]

    async def many() -> list[EpisodeResult]:
        async with httpx.AsyncClient(timeout=60) as client:
            return await asyncio.gather(*(
                taskgym.run_episode("coding-terminal-v0", base_url=url, task="calc",
                                    model=("oracle", "hacker")[i % 2], http_client=client,
                                    make_kwargs={"tasks": CALC}) for i in range(8)))

    results = asyncio.run(many())
    assert [r.reward for r in results] == [1.0, 0.0] * 4


def test_a_connection_the_server_closed_is_tried_again() -> None:
    import httpx

    replies = iter([httpx.ReadError("closed"), SCRIPTS["oracle"][0],
                    httpx.RemoteProtocolError("closed"), SCRIPTS["oracle"][1]])

    def handler(request: httpx.Request) -> httpx.Response:
        reply = next(replies)
        if isinstance(reply, Exception):
            raise reply
        return httpx.Response(200, json={"choices": [{"message": reply}]})

    async def go() -> EpisodeResult:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            return await taskgym.run_episode("coding-terminal-v0", base_url="http://model/v1",
                                             model="m", task="calc", http_client=client,
                                             make_kwargs={"tasks": CALC})

    assert asyncio.run(go()).reward == 1.0


def test_images_go_to_the_endpoint_as_content_blocks(endpoint: tuple[ScriptedEndpoint, str]) -> None:
    scripted, url = endpoint
    scripted.requests.clear()
    result = asyncio.run(taskgym.run_episode("mesh-trimesh-v0", base_url=url, model="viewer",
                                             task="drill-7-8ths-cube", images=True))
    assert (result.verdict, result.ended) == ("graded", "submitted")
    sent = scripted.requests[1]["messages"][-1]  # the render's result, as the model got it
    assert sent["role"] == "tool" and sent["tool_call_id"] == "r"
    assert sent["content"][0]["type"] == "text" and "top view" in sent["content"][0]["text"]
    assert sent["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
    text_only = asyncio.run(taskgym.run_episode("mesh-trimesh-v0", base_url=url, model="viewer",
                                                task="drill-7-8ths-cube"))
    assert isinstance(text_only.messages[3]["content"], str)
