"""Reading a submitted answer and scoring it against the gold answer.

A submission is the strings the agent passed to ``submit``: an answer (``"$1,234.5"``,
``"(12.3)%"``, ``"1.2 billion"``, ``"Industrial"``, ``"not stated"``) and a unit
(``"millions"``, ``"percent"``...). :func:`parse_answer` reduces it to one number times a
multiplier. :func:`grade` compares that with the gold answer: correct when within
``max(1e-3 x |gold|, half a unit of the gold's last reported digit)`` *in absolute terms*,
so a right number with the wrong scale (thousands for millions) is wrong. An answer holding
more than one number is wrong, whatever else it holds.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from taskgym.core.reward import RewardResult

__all__ = ["Evidence", "GoldAnswer", "ParsedAnswer", "grade", "parse_answer", "parse_pages"]

SCALES: dict[str, float] = {
    "units": 1.0, "thousands": 1e3, "millions": 1e6, "billions": 1e9, "percent": 1e-2,
}
"""Gold scales and what one reported unit is worth."""

_SCALE_WORDS: tuple[tuple[str, float], ...] = (
    (r"basis points?|bps", 1e-4),
    (r"percent(?:age)?(?: points?)?|per cent|pct|%", 1e-2),
    (r"thousands?|k|'?000s?", 1e3),
    (r"millions?|mn|mm|m", 1e6),
    (r"billions?|bn|b", 1e9),
    (r"trillions?|tn", 1e12),
)
_SCALE_RE = re.compile(r"(?<![a-z0-9])(?:" + "|".join(
    f"(?P<s{i}>{words})" for i, (words, _) in enumerate(_SCALE_WORDS)) + r")(?![a-z0-9])")
"""A scale word, whole (not the "m" of "from"); group ``s<i>`` names its _SCALE_WORDS entry."""
_NUMBER_RE = re.compile(r"\d[\d,]*(?:\.\d+)?|\.\d+")
_CURRENCY = re.compile(r"(?<![a-z])(?:us\$|usd|eur|gbp|dollars?)(?![a-z])|[$€£]")
_MINUS = re.compile(r"(?:^\s*-\s*|[\s(:=]-)(?:(?:us\$|usd|[$€£])\s?)?$")
"""A minus sign before a number: leading the answer, or attached to the number (not the
dash of "Kenvue - 13.2 billion")."""
_NOT_STATED = frozenset({
    "not stated", "not disclosed", "not reported", "not given", "not available", "not provided",
    "not mentioned", "unknown", "n a", "na", "none", "cannot be determined",
    "the document does not say", "not in the document",
})
MAX_ANSWER_CHARS = 500


@dataclass(frozen=True)
class ParsedAnswer:
    """What a submission says: its one number (if it holds exactly one) and its scale."""

    number: float | None
    multiplier: float
    numbers_found: int
    words: str
    """The answer's text, case-folded, without punctuation or numbers."""

    @property
    def absolute(self) -> float | None:
        return None if self.number is None else self.number * self.multiplier


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


def _fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return text.replace("\u2212", "-").replace("\u2013", "-").replace("\u2014", "-")


def parse_answer(answer: str, unit: str = "") -> ParsedAnswer:
    """One number and its multiplier from ``answer`` (scale words there win over ``unit``)."""
    text = _fold(answer[:MAX_ANSWER_CHARS])
    numbers = list(_NUMBER_RE.finditer(text))
    number: float | None = None
    at = numbers[0].end() if len(numbers) == 1 else 0
    if len(numbers) == 1:
        number = float(numbers[0].group().replace(",", ""))
        before, after = text[: numbers[0].start()], text[at:]
        enclosed = (re.search(r"\(\s*(?:us\$|usd|[$€£])?\s*$", before)
                    and re.match(r"\s*[a-z%]*\s*\)", after))
        if enclosed or re.search(_MINUS, before):
            number = -number
    multiplier = _multiplier(_NUMBER_RE.sub(lambda m: " " * len(m.group()), text), at)
    if multiplier is None:
        multiplier = _multiplier(_fold(unit[:MAX_ANSWER_CHARS]), 0) or 1.0
    words = " ".join(re.sub(r"[^a-z ]+", " ", _NUMBER_RE.sub(" ", text)).split())
    return ParsedAnswer(number, multiplier, len(numbers), words)


def _multiplier(text: str, at: int) -> float | None:
    """The scale of the scale word nearest after position ``at`` (the number's end), else of
    the last one before it; None when ``text`` holds no scale word."""
    # "$1.2m": the scale word follows the digits; currency is blanked out first (same length,
    # so positions still count from the number)
    text = _CURRENCY.sub(lambda m: " " * len(m.group()), text)
    found = list(_SCALE_RE.finditer(text))
    if not found:
        return None
    match = next((m for m in found if m.start() >= at), found[-1])
    return _SCALE_WORDS[int(str(match.lastgroup)[1:])][1]


def parse_pages(pages: Sequence[int | str], documents: Sequence[str]) -> set[tuple[str, int]]:
    """Cited pages as (document, page): ints name a page of the first document,
    ``"report.pdf:12"`` (or ``"report:12"``) a page of that one; unreadable items are skipped."""
    cited: set[tuple[str, int]] = set()
    stems = {d.removesuffix(".pdf"): d for d in documents}
    for item in list(pages)[:100]:
        if isinstance(item, int) and not isinstance(item, bool):
            if documents:
                cited.add((documents[0], item))
            continue
        name, _, number = str(item).rpartition(":")
        name = name.strip() or (documents[0] if documents else "")
        doc = stems.get(name.removesuffix(".pdf"))
        if doc is not None and number.strip().isdigit():
            cited.add((doc, int(number)))
    return cited


def grade(gold: GoldAnswer, answer: str, unit: str, pages: Sequence[int | str],
          documents: Sequence[str]) -> RewardResult:
    """Score a submission: 1 when the value is right (components: value, scale, pages)."""
    parsed = parse_answer(answer, unit)
    value_ok, scale_ok, why = _judge(gold, parsed, answer)
    wanted = {(e.document, e.page) for e in gold.evidence}
    cited = parse_pages(pages, documents)
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
        names = {_words(gold.text), *(_words(a) for a in gold.aliases)}
        ok = _words(answer[:MAX_ANSWER_CHARS]) in names
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


def _words(text: str) -> str:
    return " ".join(w for w in re.sub(r"[^a-z0-9 ]+", " ", _fold(text)).split() if w != "the")
