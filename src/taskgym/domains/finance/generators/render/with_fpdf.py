"""Laying a :class:`Document` out with fpdf2 (its table API, text columns, drawn charts)."""

from __future__ import annotations

import datetime as dt

from fpdf import FPDF
from fpdf.fonts import FontFace

from taskgym.domains.finance.generators.render.model import (
    Chart,
    Document,
    Heading,
    PageBreak,
    Paragraph,
    Rendered,
    Table,
)

__all__ = ["render_fpdf"]

_FIXED_DATE = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
_FONTS = {"Helvetica": "helvetica", "Times": "times", "Courier": "courier"}


class _Filing(FPDF):
    header_text = ""

    def header(self) -> None:
        self.set_font(self.font_family, "", 7.5)
        self.set_xy(self.l_margin, 10)
        self.cell(0, 4, self.header_text)
        self.set_y(self.t_margin)

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font(self.font_family, "", 7.5)
        self.cell(0, 4, f"Page {self.page_no()}", align="R")


def render_fpdf(document: Document) -> Rendered:
    style = document.style
    font, size = _FONTS[style.font], style.font_size
    pdf = _Filing(unit="pt", format="letter")
    pdf.header_text = document.header
    pdf.set_creation_date(_FIXED_DATE)
    pdf.set_title(document.title)
    pdf.set_author(document.header)
    pdf.set_creator("taskgym")
    pdf.set_producer("fpdf2")
    pdf.set_margins(54, 54, 54)
    pdf.set_auto_page_break(True, 54)
    pdf.set_font(font, "", size)
    pdf.add_page()
    pdf.set_y(220)
    pdf.set_font(font, "B", size + 8)
    pdf.multi_cell(0, (size + 8) * 1.3, document.title, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(font, "", size)
    pdf.multi_cell(0, size * 1.4, document.subtitle, new_x="LMARGIN", new_y="NEXT")
    pdf.add_page()
    pages: dict[str, int] = {}
    line = size * 1.35
    narrative: list[Paragraph] = []

    def flush() -> None:
        """Set the pending paragraphs: in columns when the style has two (keyed ones, which
        questions cite, full width), wrapped here since fpdf2's line breaking is slow."""
        run: list[Paragraph] = []
        for par in narrative:
            if style.columns == 2 and not par.key:
                run.append(par)
                continue
            if run:
                _columns(pdf, run, font, size)
                run = []
            if par.key:
                if pdf.will_page_break(line * 2):
                    pdf.add_page()
                pages.setdefault(par.key, pdf.page_no())
            _lines(pdf, par, font, size, pdf.epw, pdf.l_margin)
            pdf.ln(size * 0.6)
        if run:
            _columns(pdf, run, font, size)
        pdf.set_font(font, "", size)
        narrative.clear()

    for block in document.blocks:
        if isinstance(block, Paragraph):
            narrative.append(block)
            continue
        flush()
        if isinstance(block, Heading):
            if pdf.will_page_break(80):
                pdf.add_page()
            pdf.set_font(font, "B", size + 8 - 3 * block.level)
            pdf.ln(size * 0.8)
            pdf.multi_cell(0, (size + 8 - 3 * block.level) * 1.3, block.text, new_x="LMARGIN",
                           new_y="NEXT")
            pdf.ln(size * 0.4)
            pdf.set_font(font, "", size)
        elif isinstance(block, PageBreak):
            pdf.add_page()
        elif isinstance(block, Table):
            _table(pdf, block, font, size, style.table, pages)
        elif isinstance(block, Chart):
            _chart(pdf, block, font, size, pages)
    flush()
    data = bytes(pdf.output())
    return Rendered(data, pages, pdf.page_no())


def _wrap(pdf: FPDF, text: str, width: float) -> list[str]:
    widths: dict[str, float] = {}  # words repeat: measure each once per paragraph font
    space = pdf.get_string_width(" ")
    lines: list[str] = []
    current: list[str] = []
    used = 0.0
    for word in text.split():
        size = widths.get(word)
        if size is None:
            size = widths[word] = pdf.get_string_width(word)
        if current and used + space + size > width:
            lines.append(" ".join(current))
            current, used = [], 0.0
        used += (space if current else 0.0) + size
        current.append(word)
    if current:
        lines.append(" ".join(current))
    return lines


def _lines(pdf: FPDF, par: Paragraph, font: str, size: float, width: float, x: float) -> None:
    """One paragraph at ``x``, ``width`` wide, from the current y (pages break as needed)."""
    pdf.set_font(font, "", size - 1.5 if par.small else size)
    height = pdf.font_size_pt * 1.3
    for text in _wrap(pdf, par.text, width):
        if pdf.will_page_break(height):
            pdf.add_page()
        pdf.text(x, pdf.get_y() + pdf.font_size_pt, text)  # far faster than cell()
        pdf.set_y(pdf.get_y() + height)


def _columns(pdf: FPDF, run: list[Paragraph], font: str, size: float) -> None:
    """Paragraphs in two columns: down the left, then the right, then the next page."""
    gutter = 18.0
    width = (pdf.epw - gutter) / 2
    lines: list[tuple[str, float, float]] = []  # text, font size, space after
    for par in run:
        font_size = size - 1.5 if par.small else size
        pdf.set_font(font, "", font_size)
        wrapped = _wrap(pdf, par.text, width)
        lines += [(t, font_size, font_size * 0.6 if i == len(wrapped) - 1 else 0.0)
                  for i, t in enumerate(wrapped)]
    bottom = pdf.h - pdf.b_margin
    top, column, lowest = pdf.get_y(), 0, pdf.get_y()
    y = top
    for text, font_size, after in lines:
        height = font_size * 1.3
        if y + height > bottom:
            if column == 0:
                column, y = 1, top
            else:
                pdf.add_page()
                column, top = 0, pdf.get_y()
                y, lowest = top, top
        pdf.set_font(font, "", font_size)
        pdf.text(pdf.l_margin + column * (width + gutter), y + font_size, text)
        y += height + after
        lowest = max(lowest, y)
    pdf.set_xy(pdf.l_margin, lowest)


def _table(pdf: FPDF, block: Table, font: str, size: float, look: str,
           pages: dict[str, int]) -> None:
    row_height = (size - 1) * 1.45
    needed = row_height * (len(block.rows) + 4)
    if pdf.will_page_break(needed):
        pdf.add_page()
    if block.key:
        pages.setdefault(block.key, pdf.page_no())
    pdf.set_font(font, "B", size - 0.5)
    pdf.multi_cell(0, size * 1.3, block.title, new_x="LMARGIN", new_y="NEXT")
    if block.note:
        pdf.set_font(font, "I", size - 1.5)
        pdf.multi_cell(0, size * 1.3, block.note, new_x="LMARGIN", new_y="NEXT")
    pdf.set_font(font, "", size - 1.5)
    n = len(block.columns)
    first = 46 if n <= 4 else 34
    widths = (first, *[(100 - first) / (n - 1)] * (n - 1))
    borders = {"grid": "ALL", "lines": "HORIZONTAL_LINES", "zebra": "NONE"}[look]
    with pdf.table(col_widths=widths, text_align=("LEFT", *["RIGHT"] * (n - 1)),
                   borders_layout=borders, line_height=row_height,
                   cell_fill_color=(242, 242, 242) if look == "zebra" else (255, 255, 255),
                   cell_fill_mode="ROWS" if look == "zebra" else "NONE",
                   headings_style=FontFace(emphasis="BOLD")) as table:
        table.row(block.columns)
        for i, cells in enumerate(block.rows):
            emphasis = FontFace(emphasis="BOLD") if i in block.totals else None
            row = table.row()
            for text in cells:
                row.cell(text, style=emphasis)
    pdf.ln(size)


def _chart(pdf: FPDF, block: Chart, font: str, size: float, pages: dict[str, int]) -> None:
    height, label_room = 170.0, 30.0
    if pdf.will_page_break(height + label_room + 20):
        pdf.add_page()
    if block.key:
        pages.setdefault(block.key, pdf.page_no())
    pdf.set_font(font, "B", size)
    pdf.multi_cell(0, size * 1.3, block.title, new_x="LMARGIN", new_y="NEXT")
    top = pdf.get_y() + 14
    left, width = pdf.l_margin + 20, pdf.epw - 40
    top_value = max(max(block.values), 1)
    slot = width / len(block.values)
    bar = slot * 0.55
    base = top + height
    pdf.set_draw_color(0, 0, 0)
    pdf.line(left, base, left + width, base)
    pdf.set_font(font, "", size - 1.5)
    for i, (label, value, text) in enumerate(zip(block.labels, block.values, block.value_labels,
                                                 strict=True)):
        x = left + i * slot + (slot - bar) / 2
        bar_height = height * max(value, 0) / top_value
        pdf.set_fill_color(90, 120, 160)
        pdf.rect(x, base - bar_height, bar, bar_height, style="F")
        pdf.set_xy(x - 10, base - bar_height - 12)
        pdf.cell(bar + 20, 10, text, align="C")
        pdf.set_xy(x - 10, base + 3)
        pdf.cell(bar + 20, 10, label, align="C")
    pdf.set_fill_color(255, 255, 255)
    pdf.set_xy(pdf.l_margin, base + label_room)
