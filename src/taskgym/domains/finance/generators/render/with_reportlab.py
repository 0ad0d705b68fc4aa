"""Laying a :class:`Document` out with reportlab (platypus flowables, one or two columns)."""

from __future__ import annotations

import io
from typing import Any

from reportlab.graphics.charts.barcharts import VerticalBarChart
from reportlab.graphics.shapes import Drawing, String
from reportlab.lib import colors
from reportlab.lib.pagesizes import LETTER
from reportlab.lib.styles import ParagraphStyle
from reportlab.platypus import (
    BaseDocTemplate,
    CondPageBreak,
    Flowable,
    Frame,
    KeepTogether,
    PageTemplate,
    Spacer,
)
from reportlab.platypus import PageBreak as RLPageBreak
from reportlab.platypus import Paragraph as RLParagraph
from reportlab.platypus import Table as RLTable
from reportlab.platypus import TableStyle as RLTableStyle

from taskgym.domains.finance.generators.render.model import (
    Chart,
    Document,
    Heading,
    PageBreak,
    Paragraph,
    Rendered,
    Table,
)

__all__ = ["render_reportlab"]

_BOLD = {"Helvetica": "Helvetica-Bold", "Times": "Times-Bold", "Courier": "Courier-Bold"}
_REGULAR = {"Helvetica": "Helvetica", "Times": "Times-Roman", "Courier": "Courier"}


class _Anchor(Flowable):  # type: ignore[misc]
    """Zero-size marker that records the page it is drawn on."""

    def __init__(self, key: str, pages: dict[str, int]) -> None:
        super().__init__()
        self.key, self.pages = key, pages
        self.width = self.height = 0

    def draw(self) -> None:
        self.pages.setdefault(self.key, self.canv.getPageNumber())


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def render_reportlab(document: Document) -> Rendered:
    style = document.style
    regular, bold = _REGULAR[style.font], _BOLD[style.font]
    size = style.font_size
    body = ParagraphStyle("body", fontName=regular, fontSize=size, leading=size * 1.3,
                          spaceAfter=size * 0.6)
    small = ParagraphStyle("small", parent=body, fontSize=size - 1.5, leading=(size - 1.5) * 1.3)
    cell = ParagraphStyle("cell", fontName=regular, fontSize=size - 1.5, leading=size)
    heads = {lvl: ParagraphStyle(f"h{lvl}", fontName=bold, fontSize=size + 8 - 3 * lvl,
                                 leading=(size + 8 - 3 * lvl) * 1.25, spaceBefore=size,
                                 spaceAfter=size * 0.5) for lvl in (1, 2, 3)}
    buffer = io.BytesIO()
    margin = 54.0
    width, height = LETTER
    pages: dict[str, int] = {}

    def decorate(canvas: Any, _doc: Any) -> None:
        canvas.saveState()
        canvas.setFont(regular, 7.5)
        canvas.drawString(margin, height - 36, document.header)
        canvas.drawRightString(width - margin, 30, f"Page {canvas.getPageNumber()}")
        canvas.restoreState()

    doc = BaseDocTemplate(buffer, pagesize=LETTER, leftMargin=margin, rightMargin=margin,
                          topMargin=margin, bottomMargin=margin, title=document.title,
                          author=document.header, creator="taskgym", invariant=1)
    inner = width - 2 * margin
    if style.columns == 2:
        gap = 18.0
        column = (inner - gap) / 2
        frames = [Frame(margin, margin, column, height - 2 * margin, id="left"),
                  Frame(margin + column + gap, margin, column, height - 2 * margin, id="right")]
    else:
        column = inner
        frames = [Frame(margin, margin, inner, height - 2 * margin, id="body")]
    doc.addPageTemplates([PageTemplate(id="page", frames=frames, onPage=decorate)])

    flow: list[Flowable] = [
        Spacer(1, 160), RLParagraph(_escape(document.title), heads[1]),
        RLParagraph(_escape(document.subtitle), body), RLPageBreak()]
    for block in document.blocks:
        if isinstance(block, Heading):
            flow += [CondPageBreak(60), RLParagraph(_escape(block.text), heads[block.level])]
        elif isinstance(block, Paragraph):
            if block.key:
                flow.append(_Anchor(block.key, pages))
            flow.append(RLParagraph(_escape(block.text), small if block.small else body))
        elif isinstance(block, PageBreak):
            flow.append(RLPageBreak())
        elif isinstance(block, Table):
            flow.append(KeepTogether(_table(block, column, style.table, regular, bold, size,
                                            cell, small, pages)))
        elif isinstance(block, Chart):
            parts: list[Flowable] = [_Anchor(block.key, pages)] if block.key else []
            parts.append(_chart(block, column, regular, bold, size))
            flow.append(KeepTogether(parts))
    doc.build(flow)
    data = buffer.getvalue()
    return Rendered(data, pages, doc.page)


def _table(block: Table, width: float, look: str, regular: str, bold: str, size: float,
           cell: ParagraphStyle, small: ParagraphStyle, pages: dict[str, int]) -> list[Flowable]:
    n = len(block.columns)
    label_width = width * (0.46 if n <= 4 else 0.34)
    number_width = (width - label_width) / max(1, n - 1)
    data: list[list[Any]] = [[RLParagraph(f"<b>{_escape(c)}</b>", cell) if i == 0 else c
                              for i, c in enumerate(block.columns)]]
    for row in block.rows:
        data.append([RLParagraph(_escape(row[0]), cell), *row[1:]])
    table = RLTable(data, colWidths=[label_width] + [number_width] * (n - 1), repeatRows=1)
    commands: list[tuple[Any, ...]] = [
        ("FONT", (0, 0), (-1, -1), regular, size - 1.5),
        ("FONT", (1, 0), (-1, 0), bold, size - 1.5),
        ("ALIGN", (1, 0), (-1, -1), "RIGHT"),
        ("VALIGN", (0, 0), (-1, -1), "BOTTOM"),
        ("LINEBELOW", (0, 0), (-1, 0), 0.8, colors.black),
        ("TOPPADDING", (0, 0), (-1, -1), 1.5), ("BOTTOMPADDING", (0, 0), (-1, -1), 1.5),
    ]
    if look == "grid":
        commands.append(("GRID", (0, 0), (-1, -1), 0.4, colors.grey))
    elif look == "zebra":
        commands.append(("ROWBACKGROUNDS", (0, 1), (-1, -1), [colors.whitesmoke, colors.white]))
    for total in block.totals:
        commands += [("FONT", (1, total + 1), (-1, total + 1), bold, size - 1.5),
                     ("LINEABOVE", (1, total + 1), (-1, total + 1), 0.5, colors.black)]
    table.setStyle(RLTableStyle(commands))
    parts: list[Flowable] = [_Anchor(block.key, pages)] if block.key else []
    parts.append(RLParagraph(f"<b>{_escape(block.title)}</b>", cell))
    if block.note:
        parts.append(RLParagraph(f"<i>{_escape(block.note)}</i>", small))
    parts += [table, Spacer(1, 10)]
    return parts


def _chart(block: Chart, width: float, regular: str, bold: str, size: float) -> Drawing:
    height = min(200.0, width * 0.6)
    drawing = Drawing(width, height + 24)
    chart = VerticalBarChart()
    chart.x, chart.y = 36, 24
    chart.width, chart.height = width - 48, height - 30
    chart.data = [list(block.values)]
    chart.categoryAxis.categoryNames = list(block.labels)
    chart.categoryAxis.labels.fontName = regular
    chart.categoryAxis.labels.fontSize = size - 2
    chart.valueAxis.valueMin = 0
    chart.valueAxis.visibleLabels = False
    chart.valueAxis.visibleTicks = False
    chart.bars[0].fillColor = colors.HexColor("#4a6fa5")
    chart.barLabelFormat = lambda v: block.value_labels[block.values.index(int(v))]
    chart.barLabels.fontName = regular
    chart.barLabels.fontSize = size - 2
    chart.barLabels.nudge = 7
    drawing.add(chart)
    drawing.add(String(0, height + 10, block.title, fontName=bold, fontSize=size))
    return drawing
