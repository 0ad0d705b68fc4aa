"""The document model both PDF producers lay out, and :func:`render`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from taskgym.errors import needs_extra

__all__ = ["Block", "Chart", "Document", "Heading", "PageBreak", "Paragraph", "Rendered", "Style",
           "Table", "render"]


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 1


@dataclass(frozen=True)
class Paragraph:
    text: str
    key: str = ""
    """Names the block so questions can cite the page it lands on."""
    small: bool = False


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""
    """A units line printed above the table (``"(in millions, except per-share data)"``)."""
    key: str = ""
    totals: frozenset[int] = frozenset()
    """Row indexes printed bold with a rule above (subtotals and totals)."""


@dataclass(frozen=True)
class Chart:
    """A bar chart with each bar's value printed above it."""

    title: str
    labels: tuple[str, ...]
    values: tuple[int, ...]
    value_labels: tuple[str, ...]
    key: str = ""


@dataclass(frozen=True)
class PageBreak:
    pass


Block = Heading | Paragraph | Table | Chart | PageBreak


@dataclass(frozen=True)
class Style:
    """How a document looks; the producer is part of it."""

    producer: Literal["reportlab", "fpdf2"] = "reportlab"
    columns: Literal[1, 2] = 1
    font: Literal["Helvetica", "Times", "Courier"] = "Helvetica"
    table: Literal["grid", "lines", "zebra"] = "lines"
    font_size: float = 9.5


@dataclass(frozen=True)
class Document:
    title: str
    subtitle: str
    header: str
    blocks: tuple[Block, ...]
    style: Style = field(default_factory=Style)


@dataclass(frozen=True)
class Rendered:
    data: bytes
    pages: dict[str, int]
    """Block key -> 1-based page where the block starts."""
    page_count: int


def render(document: Document) -> Rendered:
    """Lay ``document`` out with its style's producer; same document, same bytes."""
    with needs_extra("rendering filings", "pdf"):
        if document.style.producer == "reportlab":
            from taskgym.domains.finance.generators.render.with_reportlab import render_reportlab as run
        else:
            from taskgym.domains.finance.generators.render.with_fpdf import render_fpdf as run
    return run(document)
