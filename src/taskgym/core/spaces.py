"""Gymnasium spaces for text observations and tool-call actions."""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from pydantic import BaseModel

from taskgym.core.tool import ActionError, Tool, ToolResult, parse_action
from taskgym.errors import ConfigError

__all__ = ["SHARED_TEXT_BYTES", "ToolCallSpace", "UnicodeText"]

SHARED_TEXT_BYTES = 1 << 20
"""Default bytes of shared memory a :class:`UnicodeText` gets per sub-env in
``AsyncVectorEnv(..., shared_memory=True)``: every observation of taskgym's tools at their
default limits fits (``read_file`` shows 200,000 bytes, 600,000 once each is a replacement
character; ``bash`` 2 x 16 KiB of output)."""

_SAMPLE_ALPHABET = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 _-./é漢ü")


class UnicodeText(spaces.Space[str]):
    """Any Unicode string up to ``max_length`` characters (Gymnasium's ``Text`` needs a charset).

    ``shared_memory_bytes`` is the UTF-8 capacity of one string in ``AsyncVectorEnv``'s shared
    memory (:mod:`taskgym.core.shared_memory`); a longer string arrives with its middle cut
    and a note saying so.
    """

    def __init__(self, max_length: int = 10_000_000, seed: int | np.random.Generator | None = None,
                 shared_memory_bytes: int = SHARED_TEXT_BYTES):
        if shared_memory_bytes < 1024:
            raise ConfigError(f"shared_memory_bytes={shared_memory_bytes}: give at least 1024, so "
                              "that the note on a cut string fits")
        self.max_length = max_length
        self.shared_memory_bytes = min(shared_memory_bytes, max(1024, 4 * max_length))
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        length = int(self.np_random.integers(0, 64))
        return "".join(self.np_random.choice(_SAMPLE_ALPHABET, size=length))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeText) and other.max_length == self.max_length

    def to_jsonable(self, sample_n: Iterable[str]) -> list[str]:
        return list(sample_n)

    def from_jsonable(self, sample_n: list[str]) -> list[str]:
        return list(sample_n)


def _not_runnable(_args: Any) -> ToolResult:
    raise TypeError("a space's tools describe calls; run them through the env")


class ToolCallSpace(spaces.Space[dict[str, Any]]):
    """Actions that call one of ``tools`` with valid arguments.

    ``sample()`` gives random but well-formed calls (arguments drawn from each tool's
    argument model), for fuzzing and the random agent.
    """

    def __init__(self, tools: Sequence[Tool], seed: int | np.random.Generator | None = None):
        # keep only what describes the calls, so the space pickles (AsyncVectorEnv)
        self.tools: Mapping[str, Tool] = {
            t.name: Tool(t.name, t.description, t.args, _not_runnable) for t in tools}
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def contains(self, x: Any) -> bool:
        return not isinstance(parse_action(x, self.tools), ActionError)

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        names = sorted(self.tools)
        tool = self.tools[names[int(self.np_random.integers(len(names)))]]
        return {"tool": tool.name, "args": self._sample_args(tool.args)}

    def _sample_args(self, model: type[BaseModel]) -> dict[str, Any]:
        args: dict[str, Any] = {}
        for name, field in model.model_fields.items():
            if not field.is_required() and self.np_random.random() < 0.5:
                continue
            args[name] = self._sample_value(field.annotation, field.metadata)
        return args

    def _sample_value(self, annotation: Any, metadata: list[Any]) -> Any:
        origin = typing.get_origin(annotation)
        if origin in (typing.Union, types.UnionType):
            options = [a for a in typing.get_args(annotation) if a is not type(None)]
            return self._sample_value(options[0], metadata)
        if origin is typing.Literal:
            choices = typing.get_args(annotation)
            return choices[int(self.np_random.integers(len(choices)))]
        bounds = {key: getattr(m, key) for m in metadata
                  for key in ("ge", "gt", "le", "lt", "min_length", "max_length")
                  if getattr(m, key, None) is not None}
        if origin in (tuple, list):  # as JSON has them: lists
            items = typing.get_args(annotation) or (str, ...)
            if origin is list or items[-1] is Ellipsis:
                low = int(bounds.get("min_length", 0))
                count = int(self.np_random.integers(low, max(low, min(3, int(bounds.get(
                    "max_length", 3)))) + 1))
                return [self._sample_value(items[0], []) for _ in range(count)]
            return [self._sample_value(item, []) for item in items]
        if origin is dict or annotation is dict:
            return {}
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return self._sample_args(annotation)
        if annotation is bool:
            return bool(self.np_random.random() < 0.5)
        if annotation in (int, float):
            low = bounds.get("ge", bounds.get("gt", 0))
            high = bounds.get("le", bounds.get("lt", low + 100))
            if annotation is int:
                low = int(low) + (1 if "gt" in bounds and "ge" not in bounds else 0)
                high = int(high) - (1 if "lt" in bounds and "le" not in bounds else 0)
                return int(self.np_random.integers(low, max(low, high) + 1))
            value = float(self.np_random.uniform(float(low), float(high)))
            return min(max(value, float(low) + 1e-9), float(high) - 1e-9)
        min_len = int(bounds.get("min_length", 1))
        max_len = int(bounds.get("max_length", 24))
        length = int(self.np_random.integers(min_len, max(min_len, max_len) + 1))
        return "".join(self.np_random.choice(_SAMPLE_ALPHABET[:63], size=length))

    def __repr__(self) -> str:
        return f"ToolCallSpace({', '.join(self.tools)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCallSpace) and list(other.tools) == list(self.tools)
