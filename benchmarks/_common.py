"""Helpers shared by the benchmark scripts: statistics, result rows, tables."""

from __future__ import annotations

import os
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TASK_ID = "py-fix-memo-leak"
ENV_ID = "coding-terminal-v0"


def ms(seconds: float) -> float:
    return seconds * 1000.0


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0..100)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(pct / 100.0 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def load_note() -> str:
    """One line on how busy the machine is (the figures are noisy when it is)."""
    one, five, _ = os.getloadavg()
    cpus = os.cpu_count() or 1
    busy = " (busy: expect noise)" if one > 0.5 * cpus else ""
    return f"load average {one:.2f} / {five:.2f} on {cpus} CPUs{busy}"


@dataclass
class Row:
    """One line of the summary: a taskgym figure beside its floor and its target."""

    figure: str
    value: str
    floor: str
    comparison: str
    target: str
    passed: bool

    def cells(self) -> list[str]:
        return [self.figure, self.value, self.floor, self.comparison, self.target,
                "PASS" if self.passed else "FAIL"]


HEADERS = ["figure", "taskgym", "floor", "ratio / difference", "target", "result"]


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table with aligned columns."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)), line]
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(out)


def markdown(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(out)


def print_rows(title: str, rows: Sequence[Row]) -> None:
    print(f"\n== {title} ==")
    print(table(HEADERS, [r.cells() for r in rows]))
    sys.stdout.flush()
