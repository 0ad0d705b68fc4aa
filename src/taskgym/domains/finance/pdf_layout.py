"""A page's text as printed: characters into words, words into runs, runs into lines.

pdfium's own text rectangles are runs on PDFs that set text in strings, but one rectangle a
glyph on PDFs printed by browsers and HTML converters (Skia/PDF, wkhtmltopdf, EO.Pdf, iText),
where every glyph is placed on its own. So the layout is built from the characters: a word is
the characters pdfium reads between white space that touch on one baseline; a run is the
words of a line with no more than a wide space between them (a phrase, a table cell); a line
is the runs whose baselines agree. Baselines, not boxes, decide lines: a comma's box sits a
few points below the digits' but on their baseline.
"""

from __future__ import annotations

import ctypes
import re
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Line", "Run", "layout_text", "page_lines", "run_tables", "whole_table"]

CHAR_WIDTH = 4.6
"""Points per character column of layout text."""
_WORD_GAP = 0.2
"""A gap wider than this (in font sizes) between two glyphs with no space ends a word."""
_RUN_GAP = 0.8
"""A gap wider than this (in font sizes) between two words ends a run: a new column."""
_SAME_LINE = 0.45
"""Baselines closer than this (in font sizes, at least 2 pt) share a line."""


@dataclass
class Run:
    """Words printed next to each other on one line: ``left`` and ``right`` in points."""

    left: float
    right: float
    baseline: float
    size: float
    text: str


Line = list[Run]


@dataclass
class _Glyph:
    char: str
    left: float
    right: float
    baseline: float
    size: float


def _glyphs(textpage: Any, raw: Any) -> list[_Glyph | None]:
    """Every character of the text page in pdfium's reading order; None for white space.
    A glyph spans its loose box (its advance width), not its ink: a "1" is as wide as a "4"."""
    handle = textpage.raw
    box = raw.FS_RECTF()
    x, y = ctypes.c_double(), ctypes.c_double()
    out: list[_Glyph | None] = []
    for i in range(raw.FPDFText_CountChars(handle)):
        code = raw.FPDFText_GetUnicode(handle, i)
        char = chr(code) if 0 < code < 0x110000 else ""
        if code in (0, 0xFFFE):  # pdfium's mark for a hyphen it took as such, or a glyph
            # without a Unicode mapping (the fi, ff, fl ligatures of some converters): kept as
            # U+FFFD so that "\ufffdrst" stays one word
            char = "-" if raw.FPDFText_IsHyphen(handle, i) == 1 else "\ufffd"
        if (not char or char.isspace() or code in (0xFFFF, 0xFEFF)
                or not raw.FPDFText_GetLooseCharBox(handle, i, box)):
            out.append(None)
            continue
        raw.FPDFText_GetCharOrigin(handle, i, x, y)
        size = abs(raw.FPDFText_GetFontSize(handle, i)) or abs(box.top - box.bottom) or 10.0
        left, right = min(box.left, box.right), max(box.left, box.right)
        out.append(_Glyph(char, left, right, y.value, size))
    return out


def _words(glyphs: Sequence[_Glyph | None]) -> list[Run]:
    """Glyphs into words: broken by white space, a gap, or a change of baseline."""
    words: list[Run] = []
    current: Run | None = None
    for glyph in glyphs:
        if glyph is None:
            current = None
            continue
        if current is not None:
            gap = glyph.left - current.right
            size = max(current.size, glyph.size)
            if (abs(glyph.baseline - current.baseline) > _SAME_LINE * size
                    or gap > _WORD_GAP * size or gap < -0.5 * size):
                current = None
        if current is None:
            current = Run(glyph.left, glyph.right, glyph.baseline, glyph.size, glyph.char)
            words.append(current)
        else:
            current.text += glyph.char
            current.right = max(current.right, glyph.right)
            current.size = max(current.size, glyph.size)
    return words


def _lines(words: list[Run]) -> list[Line]:
    """Words into lines top to bottom, each line's words joined into runs left to right."""
    lines: list[list[Run]] = []
    for word in sorted(words, key=lambda w: (-w.baseline, w.left)):
        if lines:
            last = lines[-1][0]
            if last.baseline - word.baseline <= max(2.0, _SAME_LINE * min(last.size, word.size)):
                lines[-1].append(word)
                continue
        lines.append([word])
    out = []
    for line in lines:
        runs: list[Run] = []
        for word in sorted(line, key=lambda w: w.left):
            if runs and word.left - runs[-1].right <= _RUN_GAP * max(word.size, runs[-1].size):
                runs[-1].text += " " + word.text
                runs[-1].right = max(runs[-1].right, word.right)
            else:
                runs.append(Run(word.left, word.right, word.baseline, word.size, word.text))
        out.append(runs)
    return out


def page_lines(page: Any, raw: Any) -> tuple[list[Line], float]:
    """The lines of a pdfium page (top to bottom, runs left to right) and the page's width."""
    textpage = page.get_textpage()
    try:
        glyphs = _glyphs(textpage, raw)
    finally:
        textpage.close()
    return _lines(_words(glyphs)), page.get_width()


def layout_text(lines: Sequence[Line]) -> str:
    """Lines as text, each run at the column of its left edge."""
    out = []
    for line in lines:
        row = ""
        for run in line:
            column = int(run.left / CHAR_WIDTH)
            row += " " * max(1 if row else 0, column - len(row)) + run.text
        out.append(row.rstrip())
    return textwrap.dedent("\n".join(out)) + "\n"


_NUMBER = re.compile(r"\$?\s?\(?-?\$?[\d,]*\.?\d+\)?%?\*?")


def whole_table(table: list[list[str]]) -> bool:
    """A table whose numeric cells are each one whole number and that has two columns."""
    numbers = [cell for row in table for cell in row[1:] if cell]
    return (max((len(row) for row in table), default=0) >= 2 and bool(numbers)
            and all(_NUMBER.fullmatch(cell) and not cell.endswith(",") for cell in numbers
                    if any(ch.isdigit() for ch in cell))
            and not any(re.search(r"\d\s+\(?\d", cell) for row in table for cell in row))


def run_tables(lines: Sequence[Line], width: float) -> list[list[list[str]]]:
    """Tables from text runs: consecutive lines of two or more runs, split per text column."""
    middle = width / 2
    lefts = [[r for r in line if r.right <= middle] for line in lines]
    rights = [[r for r in line if r.left >= middle] for line in lines]
    crossing = any(run.left < middle - 4 and run.right > middle + 4
                   for line in lines for run in line)
    # two text columns: a table inside the left one, or words (not right-aligned figures)
    # starting many right-half lines at one x, the left edge of a second column
    tabular_left = sum(len(runs) >= 2 for runs in lefts)
    starts = Counter(round(runs[0].left) for runs in rights
                     if runs and not _NUMBER.fullmatch(runs[0].text))
    second_column = max(starts.values(), default=0) >= 4
    parts = [list(lines)] if crossing or (tabular_left < 2 and not second_column) else [lefts, rights]
    tables: list[list[list[str]]] = []
    for part in parts:
        rows: list[list[str]] = []
        pending = ""  # a label wrapped onto its own line above its figures
        for line in part:
            cells = _merge_currency([run.text for run in line])
            if len(cells) >= 2:
                if pending and not _NUMBER.fullmatch(cells[0]):
                    cells[0] = f"{pending} {cells[0]}"
                rows.append(cells)
                pending = ""
            elif len(cells) == 1 and rows and not _NUMBER.fullmatch(cells[0]):
                pending = f"{pending} {cells[0]}".strip()
            elif cells or not rows:
                if len(rows) >= 2:
                    tables.append(rows)
                rows, pending = [], ""
        if len(rows) >= 2:
            tables.append(rows)
    for table in tables:  # header rows lack the label cell: pad them on the left
        widest = max(len(row) for row in table)
        for i, row in enumerate(table):
            if len(row) < widest and (_NUMBER.fullmatch(row[0]) or row[0][:3] == "Dec"):
                table[i] = [""] * (widest - len(row)) + row
    return tables


def _merge_currency(cells: list[str]) -> list[str]:
    """A lone currency sign joins the figure after it (``$`` ``39,240`` -> ``$ 39,240``), so
    the rows of a table keep one cell per column."""
    out: list[str] = []
    for cell in cells:
        if out and out[-1] in ("$", "€", "£") and cell[:1] and cell[0] in "0123456789(-.":
            out[-1] = f"{out[-1]} {cell}"
        else:
            out.append(cell)
    return out
