"""The conformance checks' registry: :data:`CHECKS` by name, filled by :func:`check`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from taskgym.sandbox.base import Backend

__all__ = ["CHECKS", "Check", "check", "expect", "expect_raises"]

Check = Callable[[Backend], None]
CHECKS: dict[str, Check] = {}
"""Every check, by its function's name without ``check_``."""


def check(fn: Check) -> Check:
    """Register ``fn`` as a conformance check."""
    CHECKS[fn.__name__.removeprefix("check_")] = fn
    return fn


def expect(condition: bool, message: str) -> None:
    """Fail the running check with ``message`` unless ``condition`` holds."""
    if not condition:
        raise AssertionError(message)


def expect_raises(what: str, call: Callable[[], Any],
                  kinds: type[BaseException] | tuple[type[BaseException], ...]) -> BaseException:
    """The exception ``call()`` raised, which must be one of ``kinds``; fail the running check
    when it raised another (naming its type) or nothing (``what`` was allowed)."""
    try:
        call()
    except kinds as exc:
        return exc
    except Exception as exc:
        wanted = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
        raise AssertionError(f"{what} raised {type(exc).__name__}, not {wanted}: {exc}") from exc
    raise AssertionError(f"{what} was allowed")
