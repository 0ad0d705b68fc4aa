"""Reading a submitted answer and scoring it against the gold answer.

A submission is the strings the agent passed to ``submit``: an answer (``"$1,234.5"``,
``"(12.3)%"``, ``"1.2 billion"``, ``"Industrial"``, ``"not stated"``) and a unit
(``"millions"``, ``"percent"``...). :func:`~taskgym.domains.finance.answer_text.parse_answer`
reduces it to one number times a multiplier. :func:`grade` compares that with the gold
answer: correct when within ``max(1e-3 x |gold|, half a unit of the gold's last reported
digit)`` *in absolute terms*, so a right number with the wrong scale (thousands for
millions) is wrong. An answer holding more than one number is wrong, whatever else it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from taskgym.core.reward import RewardResult
from taskgym.domains.finance.answer_text import MAX_ANSWER_CHARS, ParsedAnswer, parse_answer, plain_words
from taskgym.domains.finance.pdf_tools import cited_pages

__all__ = ["SCALES", "Evidence", "GoldAnswer", "grade"]

SCALES: dict[str, float] = {
    "units": 1.0, "thousands": 1e3, "millions": 1e6, "billions": 1e9, "percent": 1e-2,
}
"""Gold scales and what one reported unit is worth."""

_NOT_STATED = frozenset({
    "not stated", "not disclosed", "not reported", "not given", "not available", "not provided",
    "not mentioned", "unknown", "n a", "na", "none", "cannot be determined",
    "the document does not say", "not in the document",
})


class Evidence(BaseModel):
    """A page (1-based) of a document that holds part of the answer."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    document: str
    page: int = Field(ge=1)


class GoldAnswer(BaseModel):
    """``tests/answer.json``: the hidden answer of a task."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["number", "text", "not_stated"]
    value: float | None = None
    """The number as the documents report it, in ``scale`` (``1234`` with ``millions``)."""
    scale: str = "units"
    """One of units, thousands, millions, billions, percent."""
    decimals: int = Field(default=0, ge=0, le=10)
    """Digits after the point in the reported value: sets the rounding tolerance."""
    text: str = ""
    """For ``kind="text"``: the expected words (case and punctuation do not matter)."""
    aliases: tuple[str, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    display: str = ""
    """How a person would write the answer (``"$1,234 million"``)."""


def grade(gold: GoldAnswer, answer: str, unit: str, pages: Sequence[int | str],
          documents: Sequence[str]) -> RewardResult:
    """Score a submission: 1 when the value is right (components: value, scale, pages)."""
    parsed = parse_answer(answer, unit)
    value_ok, scale_ok, why = _judge(gold, parsed, answer)
    wanted = {(e.document, e.page) for e in gold.evidence}
    cited = cited_pages(pages, documents)
    hits = len(wanted & cited)
    page_score = 2 * hits / (len(wanted) + len(cited)) if wanted and cited else float(not wanted)
    return RewardResult(
        score=float(value_ok), success=value_ok,
        components={"value": float(value_ok), "scale": float(scale_ok), "pages": page_score},
        details={"reason": why, "expected": gold.display, "submitted": answer[:200],
                 "unit": unit[:50], "cited_pages": sorted(f"{d}:{p}" for d, p in cited)})


def _judge(gold: GoldAnswer, parsed: ParsedAnswer, answer: str) -> tuple[bool, bool, str]:
    """(value right, scale right, why) for one parsed submission."""
    if gold.kind == "not_stated":
        ok = parsed.numbers_found == 0 and parsed.words in _NOT_STATED
        return ok, ok, "" if ok else "the documents do not state this; answer 'not stated'"
    if gold.kind == "text":
        names = {plain_words(gold.text), *(plain_words(a) for a in gold.aliases)}
        ok = plain_words(answer[:MAX_ANSWER_CHARS]) in names
        return ok, ok, "" if ok else "the answer does not name the expected item"
    if parsed.numbers_found != 1 or parsed.absolute is None:
        return False, False, (f"the answer holds {parsed.numbers_found} numbers; give exactly one")
    assert gold.value is not None
    multiplier = SCALES[gold.scale]
    target = gold.value * multiplier
    tolerance = max(1e-3 * abs(target), 0.5 * 10.0 ** -gold.decimals * multiplier) * (1 + 1e-9)
    value_ok = abs(parsed.absolute - target) <= tolerance
    ratio = abs(parsed.absolute) / abs(target) if target else float(parsed.absolute == 0)
    scale_ok = value_ok or 10 ** -0.5 <= ratio <= 10 ** 0.5
    if value_ok:
        return True, True, ""
    return False, scale_ok, "wrong value" if scale_ok else "wrong scale or value"

