"""The finance tools: the shared document tools over the trusted PDFs on the host
(:mod:`taskgym.domains.finance.pdf_tools`) and ``python`` in the sandbox; ``submit`` takes a
:class:`Submission`, which the env keeps for grading after the episode."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field

from taskgym.core.tool import Tool, ToolArgs
from taskgym.domains.finance.pdf_tools import pdf_tools
from taskgym.sandbox import Session
from taskgym.tools.shell import python_tool

__all__ = ["Submission", "finance_tools"]


class Submission(ToolArgs):
    """What the agent submits: ``submit``'s arguments."""

    answer: str = Field(default="", max_length=500, description=(
        "One number only (e.g. 1,234.5 or (12.3) for a negative), a short name, or "
        "'not stated' when the documents do not give the answer."))
    unit: str = Field(default="", max_length=50, description=(
        "Scale of the number: units, thousands, millions, billions or percent."))
    pages: list[int | str] = Field(default_factory=list, max_length=50, description=(
        "Pages that hold the evidence: 5 (first document) or 'annual-report-2024.pdf:5'."))


def finance_tools(documents: Callable[[], Sequence[Path]], session: Callable[[], Session],
                  max_timeout: Callable[[], float]) -> list[Tool]:
    """The tools of ``finance-pdf-v0`` over the current task's ``documents()``, but ``submit``."""
    return [
        *pdf_tools(documents),
        python_tool(session, max_timeout, "Run Python 3 in the sandbox (a calculator; pdfplumber "
                    "and pypdfium2 available, the documents in /app). Returns stdout, stderr and "
                    "the exit code."),
    ]
