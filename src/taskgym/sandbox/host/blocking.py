"""The bounded thread pool where the async API runs what has to block.

The async API (:meth:`Session.aexec`, :meth:`TaskEnv.areset` / ``astep`` / ``aclose``) drives
the local sandbox's pipes from the event loop itself. What cannot be driven that way blocks:
starting a sandbox (bubblewrap), grading, a session whose backend speaks a blocking protocol,
a tool without an async form. Those calls run here, in ONE pool shared by every env of the
process, so a thousand episodes never make a thousand threads: past the pool's size, calls
wait their turn.

The size is ``TASKGYM_BLOCKING_THREADS`` when set, else four per CPU (at least 8, at most 32);
:func:`set_max_threads` changes it before the first use.
"""

from __future__ import annotations

import asyncio
import functools
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from taskgym.errors import ConfigError
from taskgym.sandbox.config import whole_number_env

__all__ = ["max_threads", "run_blocking", "set_max_threads", "submit_blocking"]

T = TypeVar("T")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_size: int | None = None


def _default_size() -> int:
    return whole_number_env("TASKGYM_BLOCKING_THREADS", max(8, min(32, 4 * (os.cpu_count() or 1))),
                            minimum=1)


def max_threads() -> int:
    """How many threads the pool may run at once."""
    with _lock:
        return _size if _size is not None else _default_size()


def set_max_threads(size: int) -> None:
    """Set the pool's size; only before its first use (raises :class:`ConfigError` after)."""
    global _size
    if size < 1:
        raise ConfigError(f"the blocking pool needs at least one thread, not {size}")
    with _lock:
        if _pool is not None and size != _size:
            raise ConfigError("the blocking pool is running already: set its size (or "
                              "TASKGYM_BLOCKING_THREADS) before the first async call")
        _size = size


def _executor() -> ThreadPoolExecutor:
    global _pool, _size
    with _lock:
        if _pool is None:
            if _size is None:
                _size = _default_size()
            _pool = ThreadPoolExecutor(max_workers=_size, thread_name_prefix="taskgym-blocking")
        return _pool


def submit_blocking(fn: Callable[..., T], *args: object) -> Future[T]:
    """Start ``fn(*args)`` in the shared bounded pool; its (thread) future."""
    return _executor().submit(functools.partial(fn, *args))


async def run_blocking(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` in the shared bounded pool, awaited from the running event loop.

    Cancelling the awaiting coroutine does not stop ``fn`` (a thread cannot be stopped);
    who needs to know when it has ended uses :func:`submit_blocking`.
    """
    return await asyncio.wrap_future(submit_blocking(fn, *args))
