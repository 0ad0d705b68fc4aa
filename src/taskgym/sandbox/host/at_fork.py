"""taskgym's at-fork hooks, run with the garbage collector off.

Several pieces hold a lock across ``os.fork`` (acquired before it, released after it in both
processes) so that no other thread leaves their state half-changed in the child. A garbage
collection inside that window can run a finalizer (a dropped env's warm-grader lease) that
takes one of those locks, held by the very thread running the hooks: the child (or the
parent) hangs for good. So every hook is registered here, and one pair of
``os.register_at_fork`` hooks runs them all, in ``os.register_at_fork``'s order (the ``before``
hooks last registered first, the others first registered first), between turning the
collector off and back on. A hook that raises is reported on stderr and the others still
run, as ``os.register_at_fork`` does. Forks from two threads take turns through the window (one
lock, held from the first hook to the last), so neither sees the other's collector turned off
as its own state to restore.
"""

from __future__ import annotations

import gc
import os
import threading
import traceback
from collections.abc import Callable

__all__ = ["at_fork"]

Hook = Callable[[], object]
_BEFORE: list[Hook] = []
_IN_PARENT: list[Hook] = []
_IN_CHILD: list[Hook] = []
_COLLECTING = [True]  # whether the collector ran before the fork
_FORKING = threading.Lock()  # held from the first hook to the last, in both processes


def at_fork(*, before: Hook | None = None, after_in_parent: Hook | None = None,
            after_in_child: Hook | None = None) -> None:
    """:func:`os.register_at_fork`, with the collector off while the hooks run."""
    for hooks, hook in ((_BEFORE, before), (_IN_PARENT, after_in_parent),
                        (_IN_CHILD, after_in_child)):
        if hook is not None:
            hooks.append(hook)


def _run(hooks: list[Hook]) -> None:
    for hook in hooks:
        try:
            hook()
        except Exception:  # reported, the other hooks still run (their locks must go)
            traceback.print_exc()


def _before() -> None:
    _FORKING.acquire()
    _COLLECTING[0] = gc.isenabled()
    gc.disable()
    _run(_BEFORE[::-1])


def _after(hooks: list[Hook]) -> Callable[[], None]:
    def after() -> None:
        try:
            _run(hooks)
        finally:
            if _COLLECTING[0]:
                gc.enable()
            _FORKING.release()

    return after


os.register_at_fork(before=_before, after_in_parent=_after(_IN_PARENT),
                    after_in_child=_after(_IN_CHILD))
