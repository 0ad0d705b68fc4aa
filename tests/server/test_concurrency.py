"""Many sessions of one ``taskgym serve`` at once, from one client process: every session's
sandbox alive together, each sees only its own workspace, episodes end graded, and nothing is
left once the clients close (benchmarks/serve_concurrency.py runs the same with 1,000)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from taskgym.checks import host_state
from taskgym.errors import ConfigError
from taskgym.remote import RemoteEnv

pytestmark = [pytest.mark.sandbox, pytest.mark.slow]

SESSIONS = 64
GRADED = 4  # sessions that also submit (a grade runs the task's tests in a sandbox of its own)


def test_64_concurrent_sessions_from_one_client(serve: Any) -> None:
    served = serve(max_sessions=SESSIONS, max_starting=2, start_wait=300)
    before = host_state()
    everyone_reset = asyncio.Event()
    reset_count = 0
    live_at_once: list[int] = []

    async def episode(number: int) -> tuple[str, float | None]:
        nonlocal reset_count
        env = RemoteEnv(served.url, timeout=300)
        try:
            await env.areset()
            reset_count += 1
            if reset_count == SESSIONS:
                live_at_once.append(len(served.app.state.pool.sessions))
                everyone_reset.set()
            await everyone_reset.wait()
            mine = f"session-{number}"
            await env.astep({"tool": "bash", "args": {"command": f"echo {mine} > /app/me.txt"}})
            await asyncio.sleep(0)  # let the others write theirs before this one reads
            text = (await env.astep({"tool": "bash", "args": {"command": "cat /app/me.txt"}}))[0]
            reward = None
            if number < GRADED:
                answer = "42" if number % 2 == 0 else "41"
                await env.astep({"tool": "bash", "args": {"command": f"echo {answer} > /app/answer.txt"}})
                reward = (await env.astep({"tool": "submit", "args": {}}))[1]
            return text["text"], reward
        finally:
            await env.aclose()

    async def everyone() -> list[tuple[str, float | None]]:
        return list(await asyncio.wait_for(
            asyncio.gather(*(episode(n) for n in range(SESSIONS))), 600))

    results = asyncio.run(everyone())
    assert live_at_once == [SESSIONS]  # all the sessions (and sandboxes) at once
    for number, (text, reward) in enumerate(results):
        assert text == f"session-{number}\n[exit code 0]", (number, text)
        if number < GRADED:
            assert reward == (1.0 if number % 2 == 0 else 0.0), (number, reward)
    deadline = time.monotonic() + 60
    while (served.app.state.pool.sessions or host_state() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert served.app.state.pool.sessions == {} and host_state() - before == set()


def test_a_session_count_the_descriptor_limit_cannot_hold_is_refused_at_start(
        capsys: pytest.CaptureFixture[str]) -> None:
    import resource

    from taskgym.cli import main
    from taskgym.server import DESCRIPTORS_PER_SESSION, check_descriptors

    limit = check_descriptors(8)  # raised to the hard limit, and 8 sessions fit
    assert limit == resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= 8 * DESCRIPTORS_PER_SESSION
    too_many = limit // DESCRIPTORS_PER_SESSION + 1
    with pytest.raises(ConfigError, match=f"{too_many} sessions of local sandboxes need"):
        check_descriptors(too_many)
    assert check_descriptors(too_many, sandbox="docker") == limit  # fewer each: not refused
    assert main(["serve", "coding-terminal-v0", "--max-sessions", str(too_many)]) == 2
    assert "ulimit -Hn" in capsys.readouterr().err


def test_the_cli_passes_the_start_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    import taskgym.server
    from taskgym.cli import main

    seen: dict[str, Any] = {}
    monkeypatch.setattr(taskgym.server, "serve", lambda env_id, **kw: seen.update(kw))
    assert main(["serve", "coding-terminal-v0", "--max-starting", "3", "--start-wait", "600",
                 "--max-sessions", "1000"]) == 0
    assert (seen["max_starting"], seen["start_wait"], seen["max_sessions"]) == (3, 600.0, 1000)
