"""Shared memory for :class:`~taskgym.core.spaces.UnicodeText`, so that Gymnasium's
``AsyncVectorEnv`` works with its default ``shared_memory=True``.

Gymnasium's helpers (``gymnasium.vector.utils.create_shared_memory``,
``read_from_shared_memory``, ``write_to_shared_memory``) dispatch on the space's type; this
module registers them for ``UnicodeText`` (importing :mod:`taskgym` does). The layout of one
buffer of ``n`` strings, bytes::

    [capacity: u64] then n slots of [length: u64][capacity bytes of UTF-8]

The capacity is the space's ``shared_memory_bytes``, written in the buffer's header so that a
worker process writes with the capacity the buffer was made with, whatever its own space says.
A string whose UTF-8 is longer keeps its head and its tail (where the exit code and the grade
are) and has its middle replaced by a note that says how long it was.

``AsyncVectorEnv`` reads the shared buffer once, at construction, and returns that object
(deep-copied by default) after every step, so the read gives a live view,
:class:`SharedTexts`: indexing it decodes the slot as it is now, and a deep copy (what
``copy=True``, the default, returns) is a plain tuple of strings, like ``SyncVectorEnv``'s.
"""

from __future__ import annotations

import multiprocessing as mp
import struct
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any, overload

from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

from taskgym.core.spaces import UnicodeText

__all__ = ["SharedTexts", "fit"]

_U64 = struct.Struct("<Q")
_CUT_NOTE = ("\n[observation cut: its {size:,} bytes of UTF-8 do not fit the {capacity:,} bytes "
             "of AsyncVectorEnv's shared memory per sub-env, so the middle is left out; pass "
             "shared_memory=False, or use taskgym's own vector env, for whole observations]\n")


def fit(text: str, capacity: int) -> bytes:
    """``text`` as UTF-8 (lone surrogates kept), at most ``capacity`` bytes: head, the note on
    the cut, tail, each cut on a character boundary."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= capacity:
        return data
    note = _CUT_NOTE.format(size=len(data), capacity=capacity).encode()
    room = capacity - len(note)
    head = room // 2
    while head > 0 and data[head] & 0xC0 == 0x80:  # a continuation byte: back to its start
        head -= 1
    tail = len(data) - (room - head)
    while tail < len(data) and data[tail] & 0xC0 == 0x80:
        tail += 1
    return data[:head] + note + data[tail:]


class SharedTexts(Sequence[str]):
    """The ``n`` strings of a shared buffer, decoded when read (a live view)."""

    def __init__(self, memory: Any, n: int) -> None:
        self._view = memoryview(memory.get_obj()).cast("B")
        self._capacity = _U64.unpack_from(self._view, 0)[0]
        self._n = n
        if len(self._view) != _U64.size + n * (_U64.size + self._capacity):
            raise ValueError(f"a shared text buffer of {len(self._view)} bytes does not hold "
                             f"{n} strings of {self._capacity} bytes")

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._n)))
        if not -self._n <= index < self._n:
            raise IndexError(f"index {index} of {self._n} strings")
        start = _U64.size + (index % self._n) * (_U64.size + self._capacity)
        length = _U64.unpack_from(self._view, start)[0]
        begin = start + _U64.size
        return str(self._view[begin:begin + length], "utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(self._n))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return tuple(self) == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a live view: its value changes

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@create_shared_memory.register(UnicodeText)
def _create(space: UnicodeText, n: int = 1, ctx: ModuleType = mp) -> Any:
    capacity = space.shared_memory_bytes
    memory = ctx.Array("B", _U64.size + n * (_U64.size + capacity))
    _U64.pack_into(memoryview(memory.get_obj()).cast("B"), 0, capacity)
    return memory


@read_from_shared_memory.register(UnicodeText)
def _read(space: UnicodeText, shared_memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(shared_memory, n)


@write_to_shared_memory.register(UnicodeText)
def _write(space: UnicodeText, index: int, value: str, shared_memory: Any) -> None:
    view = memoryview(shared_memory.get_obj()).cast("B")
    capacity = _U64.unpack_from(view, 0)[0]
    data = fit(str(value), capacity)
    start = _U64.size + index * (_U64.size + capacity)
    _U64.pack_into(view, start, len(data))
    view[start + _U64.size:start + _U64.size + len(data)] = data
