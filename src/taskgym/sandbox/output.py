"""Output as the agent sees it: decoded, with head and tail kept when it is too long."""

from __future__ import annotations

__all__ = ["decode_capped", "join_cut"]


def decode_capped(data: bytes | bytearray, cap: int) -> str:
    """Decode output, keeping the head and tail when it is longer than ``cap``."""
    if len(data) <= cap:
        return bytes(data).decode("utf-8", errors="replace")
    half = cap // 2
    return join_cut(bytes(data[:half]), len(data) - 2 * half, bytes(data[-half:]))


def join_cut(head: bytes, cut: int, tail: bytes) -> str:
    """``head`` and ``tail`` of an output with a note of the ``cut`` bytes between them."""
    return (head + f"\n[... {cut} bytes cut ...]\n".encode() + tail).decode("utf-8", errors="replace")
