"""The idle reaper of ``taskgym serve``'s sessions leaves a session alone while any of its
calls runs: overlapping steps (``/mcp`` allows them) and a reset waiting for a start slot."""

from __future__ import annotations

import asyncio

import taskgym
from taskgym.server.sessions import SessionPool


def one_env_pool(tasks: str) -> SessionPool:
    """A pool of at most two sessions and one start slot, whose sessions share one env."""
    env = taskgym.make("coding-terminal-v0", tasks=tasks)
    return SessionPool(lambda: env, max_sessions=2, max_sessions_per_client=2,  # type: ignore[arg-type,return-value]
                       max_starting=1, start_wait=30.0)


def test_a_session_stays_busy_until_its_last_overlapping_call_ends(answer_tasks: str) -> None:
    async def scenario() -> None:
        pool = one_env_pool(answer_tasks)
        session = await pool.open("me")
        try:
            await session.reset({})
            slow = asyncio.create_task(session.step({"tool": "bash", "args": {"command": "sleep 2"}}))
            quick = asyncio.create_task(session.step({"tool": "bash", "args": {"command": "true"}}))
            await quick
            assert session.busy, "the slow step still runs"
            await slow
            assert not session.busy
        finally:
            await session.close()

    asyncio.run(scenario())


def test_a_reset_waiting_for_a_start_slot_is_busy(answer_tasks: str) -> None:
    async def scenario() -> None:
        pool = one_env_pool(answer_tasks)
        session = await pool.open("me")
        try:
            async with pool.start_slot():  # every start slot taken
                waiting = asyncio.create_task(session.reset({}))
                await asyncio.sleep(0.2)
                assert session.busy, "a reset waiting for its slot is not idle"
            await waiting
            assert not session.busy
        finally:
            await session.close()

    asyncio.run(scenario())
