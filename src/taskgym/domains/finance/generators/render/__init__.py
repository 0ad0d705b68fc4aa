"""Filings as PDFs: a producer-neutral document model and two producers (reportlab, fpdf2).

:mod:`.content` writes a company's annual or quarterly report as blocks (headings,
paragraphs, tables, bar charts); :func:`render` lays them out with the producer and style
the document names and returns the PDF bytes with the page each keyed block landed on.
"""

from taskgym.domains.finance.generators.render.model import (
    Block,
    Chart,
    Document,
    Heading,
    PageBreak,
    Paragraph,
    Rendered,
    Style,
    Table,
    render,
)

__all__ = ["Block", "Chart", "Document", "Heading", "PageBreak", "Paragraph", "Rendered", "Style",
           "Table", "render"]
