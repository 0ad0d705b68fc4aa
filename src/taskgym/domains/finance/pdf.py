"""Trusted PDFs (a task's documents), parsed once and shared by every episode and worker.

A document is keyed by the SHA-256 of its bytes. The first open extracts every page's
text with pypdfium2 (about 3 ms a page) into ``cache_dir()/pdf/<digest>/text.json``, which
also serves as the search index; later opens, in any process, read that file. Layout text
(pypdfium2's text runs placed by position), tables (pdfplumber) and page images (pypdfium2)
are computed for a page the first time it is asked for and kept beside it.
"""

from __future__ import annotations

import atexit
import hashlib
import io
import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from taskgym.domains.finance.pdf_layout import Line, layout_text, page_lines, run_tables, whole_table
from taskgym.errors import ConfigError, needs_extra
from taskgym.paths import cache_dir, write_atomic

__all__ = ["Hit", "PdfDocument", "close_documents", "open_document"]

_LOCK = threading.RLock()  # pdfium and pdfplumber are not thread-safe
_OPEN: OrderedDict[str, PdfDocument] = OrderedDict()
_DIGESTS: dict[tuple[str, int, int], str] = {}
_KEEP_OPEN = 64
_CACHE_VERSION = "2"
IMAGE_SCALE = 1.4
_TOKEN = re.compile(r"[a-z0-9]+(?:[.,'][a-z0-9]+)*")
"""A search term: a word, or a number with its separators (``1,234.5``)."""
_closes_at_exit = False


def _pdfium() -> Any:
    global _closes_at_exit
    with needs_extra("the PDF tools", "pdf"):
        import pypdfium2
    if not _closes_at_exit:  # registered after pypdfium2's own exit hook, so it runs first
        atexit.register(close_documents)
        _closes_at_exit = True
    return pypdfium2


def _write_atomic(path: Path, data: bytes) -> None:
    try:
        write_atomic(path, data)
    except OSError as exc:
        raise ConfigError(f"cannot write taskgym's cache file {path}: {exc.strerror or exc}; "
                          "free space there or set TASKGYM_CACHE to a writable folder") from exc


def _digest(path: Path) -> str:
    stat = path.stat()
    key = (str(path), stat.st_mtime_ns, stat.st_size)
    digest = _DIGESTS.get(key)
    if digest is None:
        digest = _DIGESTS[key] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digest


def open_document(path: Path) -> PdfDocument:
    """The cached document for the PDF at ``path`` (parsed at most once per content)."""
    try:
        digest = _digest(path)
    except OSError as exc:
        raise ConfigError(f"cannot read the document {path}: {exc.strerror or exc}") from exc
    with _LOCK:
        document = _OPEN.get(digest)
        if document is None:
            document = _OPEN[digest] = PdfDocument(path, digest)
            while len(_OPEN) > _KEEP_OPEN:
                _OPEN.popitem(last=False)[1].close()
        _OPEN.move_to_end(digest)
        return document


def close_documents() -> None:
    """Close and forget every open document; later opens read the disk cache (as a new
    process would)."""
    with _LOCK:
        while _OPEN:
            _OPEN.popitem()[1].close()


@dataclass(frozen=True)
class Hit:
    """A page that matches a search: its BM25 score, and whether it holds the phrase, all
    the query's words or only some."""

    document: str
    page: int
    score: float
    match: str


class PdfDocument:
    """One PDF's text, search index, layout, tables and page images, cached on disk."""

    def __init__(self, path: Path, digest: str) -> None:
        self.path, self.digest = path, digest
        self.folder = cache_dir() / "pdf" / f"{digest[:32]}-v{_CACHE_VERSION}"
        self._pdf: Any = None
        self._plumber: Any = None
        index = self.folder / "text.json"
        try:
            meta = json.loads(index.read_text())
        except (OSError, ValueError):
            meta = self._extract()
            _write_atomic(index, json.dumps(meta).encode())
        self.texts: list[str] = meta["texts"]
        self.sizes: list[tuple[float, float]] = [tuple(s) for s in meta["sizes"]]
        self.metadata: dict[str, str] = meta["metadata"]
        self._flat = [" ".join(t.split()) for t in self.texts]
        self._lower = [t.lower() for t in self._flat]
        self._token_sets: list[frozenset[str]] | None = None
        self._ranker: Any = None

    @property
    def page_count(self) -> int:
        return len(self.texts)

    def _open(self) -> Any:
        if self._pdf is None:
            try:
                self._pdf = _pdfium().PdfDocument(str(self.path))
            except _pdfium().PdfiumError as exc:
                raise ConfigError(f"{self.path.name} is not a readable PDF: {exc}") from exc
        return self._pdf

    def _extract(self) -> dict[str, Any]:
        with _LOCK:
            pdf = self._open()
            texts, sizes = [], []
            for page in pdf:
                textpage = page.get_textpage()
                texts.append(textpage.get_text_range().replace("\r\n", "\n"))
                sizes.append(page.get_size())
                textpage.close()
                page.close()
            metadata = {k: str(v) for k, v in pdf.get_metadata_dict(skip_empty=True).items()}
        return {"texts": texts, "sizes": sizes, "metadata": metadata}

    def check_page(self, page: int) -> None:
        if not 1 <= page <= self.page_count:
            raise ConfigError(f"{self.path.name} has pages 1 to {self.page_count}; "
                              f"there is no page {page}")

    def _cached(self, name: str, make: Any) -> bytes:
        path = self.folder / name
        try:
            return path.read_bytes()
        except OSError:
            with _LOCK:
                data: bytes = make()
            _write_atomic(path, data)
            return data

    def layout_text(self, page: int) -> str:
        """The page's text with lines and columns placed where they are printed."""
        self.check_page(page)
        return self._cached(f"layout/{page}.txt",
                            lambda: layout_text(self._lines(page)[0]).encode()).decode()

    def _lines(self, page_number: int) -> tuple[list[Line], float]:
        page = self._open()[page_number - 1]
        try:
            return page_lines(page, _pdfium().raw)
        finally:
            page.close()

    def search(self, query: str) -> list[Hit]:
        """Every page matching ``query``, best first by BM25 over the pages: the pages holding
        the phrase; if none does, those holding all of its words; if none, those holding any."""
        phrase = " ".join(query.lower().split())
        words = list(dict.fromkeys(_TOKEN.findall(phrase)))
        if not phrase:
            return []
        scores = self._bm25().get_scores(words) if words and self._bm25() else None
        tokens = self._tokens()
        pages = [i for i in range(self.page_count) if phrase in self._lower[i]]
        match = "phrase"
        if not pages and words:
            pages = [i for i in range(self.page_count) if tokens[i].issuperset(words)]
            match = "all words"
            if not pages:
                pages = [i for i in range(self.page_count) if tokens[i].intersection(words)]
                match = "some words"
        hits = [Hit(self.path.name, i + 1, float(scores[i]) if scores is not None else 0.0, match)
                for i in pages]
        return sorted(hits, key=lambda h: (-h.score, h.page))

    def _tokens(self) -> list[frozenset[str]]:
        if self._token_sets is None:
            self._token_sets = [frozenset(_TOKEN.findall(text)) for text in self._lower]
        return self._token_sets

    def _bm25(self) -> Any:
        """BM25 over the pages (None when no page has a word)."""
        if self._ranker is None:
            with needs_extra("search", "pdf"):
                from rank_bm25 import BM25Okapi
            corpus = [_TOKEN.findall(text) for text in self._lower]
            self._ranker = BM25Okapi(corpus) if any(corpus) else False
        return self._ranker or None

    def snippets(self, page: int, query: str) -> list[str]:
        """Up to three excerpts of ``page`` around the phrase, else around its rarest word."""
        self.check_page(page)
        index, phrase = page - 1, " ".join(query.lower().split())
        needle = phrase
        if phrase not in self._lower[index]:
            words = [w for w in dict.fromkeys(_TOKEN.findall(phrase)) if w in self._tokens()[index]]
            ranker = self._bm25()
            needle = max(words, key=lambda w: ranker.idf.get(w, 0.0)) if words and ranker else ""
        if not needle:
            return []
        starts = [m.start() for m in re.finditer(re.escape(needle), self._lower[index])][:3]
        return [self._snippet(index, start, len(needle)) for start in starts]

    def _snippet(self, index: int, start: int, length: int) -> str:
        text = self._flat[index] if len(self._flat[index]) == len(self._lower[index]) else \
            self._lower[index]
        left, right = max(0, start - 80), min(len(text), start + length + 80)
        return ("..." if left else "") + text[left:right] + ("..." if right < len(text) else "")

    def tables(self, page: int) -> list[list[list[str]]]:
        """The page's tables as rows of cell strings (pdfplumber's table finder)."""
        self.check_page(page)
        return list(json.loads(self._cached(f"tables/{page}.json",
                                            lambda: self._find_tables(page))))

    def _find_tables(self, page: int) -> bytes:
        """pdfplumber's ruled tables when every cell it finds is whole; else rows of the
        text runs as printed (what unruled, zebra or two-column tables need)."""
        if self._plumber is None:
            with needs_extra("extract_tables", "pdf"):
                import pdfplumber
            try:
                self._plumber = pdfplumber.open(self.path)
            except OSError as exc:
                raise ConfigError(f"cannot read the document {self.path}: "
                                  f"{exc.strerror or exc}") from exc
        tables = [[[" ".join((cell or "").split()) for cell in row] for row in table]
                  for table in self._plumber.pages[page - 1].extract_tables()]
        if not tables or not all(whole_table(table) for table in tables):
            tables = run_tables(*self._lines(page))
        return json.dumps(tables).encode()

    def image(self, page: int) -> bytes:
        """The page rendered as a PNG."""
        self.check_page(page)
        return self._cached(f"png/{page}.png", lambda: self._render(page))

    def _render(self, page_number: int) -> bytes:
        page = self._open()[page_number - 1]
        image = page.render(scale=IMAGE_SCALE, grayscale=True).to_pil()
        page.close()
        buffer = io.BytesIO()
        image.save(buffer, "PNG")
        return buffer.getvalue()

    def close(self) -> None:
        with _LOCK:
            if self._plumber is not None:
                self._plumber.close()
                self._plumber = None
            if self._pdf is not None:
                self._pdf.close()
                self._pdf = None
