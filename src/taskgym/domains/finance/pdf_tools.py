"""Document tools over trusted PDFs read on the host: ``pdf_info``, ``read_page``, ``search``,
``extract_tables`` and ``page_image`` (see :mod:`taskgym.domains.finance.pdf` for the parsing and its
cache). The PDFs are the task's, never the agent's: the agent cannot change what these read."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from pydantic import Field

from taskgym.core.tool import Tool, ToolArgs, ToolResult
from taskgym.domains.finance.pdf import PdfDocument, open_document
from taskgym.errors import ConfigError

__all__ = ["INFO_PAGES", "MAX_TEXT", "SEARCH_PAGE", "InfoArgs", "PageArgs", "SearchArgs",
           "cited_pages", "pdf_tools"]

MAX_TEXT = 20_000
SEARCH_PAGE = 10
"""Pages a search shows at a time."""
INFO_PAGES = 300
"""Pages ``pdf_info`` lists at a time."""
_DOC = Field(default="", max_length=300,
             description="Document file name (e.g. annual-report-2024.pdf); empty for the first.")


class InfoArgs(ToolArgs):
    document: str = _DOC
    start_page: int = Field(default=1, ge=1, le=100_000, description=(
        f"First page to list; the guide lists {INFO_PAGES} pages at a time."))


class PageArgs(ToolArgs):
    page: int = Field(description="Page number, starting at 1.")
    document: str = _DOC


class SearchArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=300,
                       description="Words or a phrase to find (case does not matter).")
    document: str = Field(default="", max_length=300,
                          description="Search only this document; empty searches every one.")
    offset: int = Field(default=0, ge=0, le=100_000,
                        description="Skip this many of the ranked pages (to see the next ones).")


def cited_pages(pages: Sequence[int | str], documents: Sequence[str]) -> set[tuple[str, int]]:
    """Pages cited as the tools name them, as (document, page): ints name a page of the first
    document, ``"report.pdf:12"`` (or ``"report:12"``) a page of that one; unreadable items
    are skipped."""
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


def pdf_tools(documents: Callable[[], Sequence[Path]]) -> list[Tool]:
    """The document tools over the PDFs ``documents()`` names (the current task's)."""

    def pick(name: str) -> PdfDocument:
        paths = list(documents())
        if not name.strip():
            return open_document(paths[0])
        wanted = name.strip().rsplit("/", 1)[-1]
        for path in paths:
            if wanted in (path.name, path.stem):
                return open_document(path)
        raise ConfigError(f"no document {name[:100]!r}; the documents are "
                          f"{', '.join(p.name for p in paths)}")

    def pdf_info(args: InfoArgs) -> ToolResult:
        chosen = [pick(args.document)] if args.document else [open_document(p) for p in documents()]
        parts = []
        for doc in chosen:
            title = doc.metadata.get("Title", "")
            parts.append(f"{doc.path.name}: {doc.page_count} pages" + (f", title: {title}" if title
                                                                        else ""))
            first = args.start_page
            last = min(doc.page_count, first + INFO_PAGES - 1)
            if first > doc.page_count:
                parts.append(f"  (no page {first}: the document ends at page {doc.page_count})")
                continue
            for number in range(first, last + 1):
                lines = [line.strip() for line in doc.texts[number - 1].splitlines() if line.strip()]
                head = next((line for line in lines[1:] if not line.startswith("Page ")), "")
                parts.append(f"  p{number}: {head[:80]}")
            if first > 1 or last < doc.page_count:
                more = (f"; pdf_info(document={doc.path.name!r}, start_page={last + 1}) lists "
                        "the next" if last < doc.page_count else "")
                parts.append(f"  [pages {first}-{last} of {doc.page_count} listed{more}]")
        return ToolResult("\n".join(parts))

    def read_page(args: PageArgs) -> ToolResult:
        doc = pick(args.document)
        text = doc.layout_text(args.page)
        if len(text) > MAX_TEXT:
            text = text[:MAX_TEXT] + "\n[page text cut at 20,000 characters]"
        return ToolResult(f"[{doc.path.name} page {args.page} of {doc.page_count}]\n{text}")

    def search(args: SearchArgs) -> ToolResult:
        chosen = [pick(args.document)] if args.document else [open_document(p) for p in documents()]
        docs = {doc.path.name: doc for doc in chosen}
        hits = sorted((hit for doc in chosen for hit in doc.search(args.query)),
                      key=lambda h: (-h.score, h.document, h.page))
        if not hits:
            return ToolResult(f"no page mentions {args.query!r}")
        shown = hits[args.offset:args.offset + SEARCH_PAGE]
        kinds = Counter(hit.match for hit in hits)
        how = ", ".join(f"{n} with {'the ' if kind == 'phrase' else ''}{kind}"
                        for kind, n in kinds.items())
        lines = [f"{len(hits)} page{'s match' if len(hits) != 1 else ' matches'} {args.query!r} "
                 f"({how}); "
                 + (f"best first, {args.offset + 1}-{args.offset + len(shown)}:" if shown else
                    f"none past offset {args.offset}")]
        for hit in shown:
            lines.append(f"{hit.document} page {hit.page} (score {hit.score:.1f}):")
            lines += [f"  {s}" for s in docs[hit.document].snippets(hit.page, args.query)]
        rest = len(hits) - args.offset - len(shown)
        if shown and rest > 0:
            lines.append(f"[{rest} more: search again with offset={args.offset + len(shown)}]")
        return ToolResult("\n".join(lines))

    def extract_tables(args: PageArgs) -> ToolResult:
        doc = pick(args.document)
        tables = doc.tables(args.page)
        if not tables:
            return ToolResult(f"no table found on {doc.path.name} page {args.page}; try read_page")
        parts = []
        for i, table in enumerate(tables, start=1):
            parts.append(f"table {i} ({len(table)} rows):")
            parts += [" | ".join(cell.replace("\n", " ") for cell in row) for row in table]
        return ToolResult("\n".join(parts)[:MAX_TEXT])

    def page_image(args: PageArgs) -> ToolResult:
        doc = pick(args.document)
        png = doc.image(args.page)
        return ToolResult(f"[image of {doc.path.name} page {args.page}: a PNG of {len(png):,} "
                          "bytes in info['images']]", images=(png,))

    return [
        Tool("pdf_info", f"List the documents: pages, title, and the first line of each page "
             f"({INFO_PAGES} pages at a time: start_page lists the next).", InfoArgs, pdf_info),
        Tool("read_page", "Read one page's text, laid out as printed (tables keep their "
             "columns).", PageArgs, read_page),
        Tool("search", "Find pages that mention a phrase (else all, else some of its words), "
             "ranked best first (BM25), 10 at a time with snippets; says how many matched "
             "and the offset for the next ones.", SearchArgs, search),
        Tool("extract_tables", "The tables of one page as rows of cells (pdfplumber).", PageArgs,
             extract_tables),
        Tool("page_image", "One page as a PNG image, for reading charts and layout.", PageArgs,
             page_image),
    ]
