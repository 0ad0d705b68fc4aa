"""Reading a free-text answer: one number and its scale, or its plain words.

An answer such as ``"$1,234.5"``, ``"(12.3)%"``, ``"1.2 billion"`` or ``"-7 bps"`` reduces to
one number times a multiplier (:func:`parse_answer`): parentheses and a leading or attached
minus make it negative, a scale word (``thousand``, ``mn``, ``%``, ``basis points``...) next to
it sets the multiplier, and a ``unit`` string given apart from the answer is the fallback. An
answer holding more than one number has no number. :func:`plain_words` folds a text answer
(case, punctuation, dashes, an article) for comparing names.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["MAX_ANSWER_CHARS", "ParsedAnswer", "fold", "parse_answer", "plain_words"]

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
MAX_ANSWER_CHARS = 500
"""Only this much of an answer is read."""


@dataclass(frozen=True)
class ParsedAnswer:
    """What an answer says: its one number (if it holds exactly one) and its scale."""

    number: float | None
    multiplier: float
    numbers_found: int
    words: str
    """The answer's text, case-folded, without punctuation or numbers."""

    @property
    def absolute(self) -> float | None:
        return None if self.number is None else self.number * self.multiplier


def fold(text: str) -> str:
    """``text`` in compatibility form, case-folded, with minus signs and dashes as ``-``."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return text.replace("\u2212", "-").replace("\u2013", "-").replace("\u2014", "-")


def parse_answer(answer: str, unit: str = "") -> ParsedAnswer:
    """One number and its multiplier from ``answer`` (scale words there win over ``unit``)."""
    text = fold(answer[:MAX_ANSWER_CHARS])
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
        multiplier = _multiplier(fold(unit[:MAX_ANSWER_CHARS]), 0) or 1.0
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


def plain_words(text: str) -> str:
    """``text``'s letters and digits as space-separated words, folded, without "the"."""
    return " ".join(w for w in re.sub(r"[^a-z0-9 ]+", " ", fold(text)).split() if w != "the")
