"""The synthetic filings: identities hold, both producers are used, and seeds are byte-exact."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from taskgym.domains.finance.generators import build_filings
from taskgym.domains.finance.generators.company import make_company
from taskgym.domains.finance.generators.content import debt_maturities
from taskgym.domains.finance.pdf import open_document

SRC = Path(__file__).resolve().parents[3] / "src"


@pytest.mark.parametrize("seed", range(40))
def test_accounting_identities_hold_every_year(seed: int) -> None:
    company = make_company(seed)
    previous = None
    for year in company.years:
        assert year.total_assets == year.total_liabilities + year.equity
        assert year.gross_profit - year.operating_expenses == year.operating_income
        assert year.revenue == sum(year.segments.values()) == sum(year.quarters)
        assert year.equity > 0 and year.cash > 0
        if previous is not None:
            assert year.cash == previous.cash + year.cfo + year.cfi + year.cff
            assert year.retained == previous.retained + year.net_income - year.dividends
        previous = year
    last = company.last
    assert sum(debt_maturities(company).values()) == last.short_debt + last.long_debt


def _printed(text: str, label: str) -> list[int]:
    """The two figures printed after ``label`` on a page's layout text."""
    line = next(line for line in text.splitlines() if label in line)
    cells = re.findall(r"\(?[\d,]+\)?", line.split(label, 1)[1])[:2]
    return [-int(c.strip("()").replace(",", "")) if c.startswith("(") else int(c.replace(",", ""))
            for c in cells]


@pytest.mark.parametrize("seed", ["identity-1", "identity-2", "identity-3"])
def test_printed_balance_sheet_balances(tmp_path: Path, seed: str) -> None:
    filings = build_filings(seed, quarterly=False)
    name, rendered = filings.documents["annual"]
    (tmp_path / name).write_bytes(rendered.data)
    text = open_document(tmp_path / name).layout_text(rendered.pages["balance"])
    assets = _printed(text, "Total assets")
    liabilities = _printed(text, "Total liabilities ")
    equity = _printed(text, "Total shareholders' equity")
    assert len(assets) == 2
    assert assets == [x + y for x, y in zip(liabilities, equity, strict=True)]


def test_the_same_seed_gives_the_same_pdfs_byte_for_byte_across_processes() -> None:
    here = build_filings("determinism-1")
    code = ("import sys, hashlib; from taskgym.domains.finance.generators import build_filings; "
            "f = build_filings('determinism-1'); "
            "print(' '.join(hashlib.sha256(r.data).hexdigest() for _, r in f.documents.values()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(SRC), "PYTHONHASHSEED": "123"}).stdout.split()
    assert out == [hashlib.sha256(r.data).hexdigest() for _, r in here.documents.values()]
    other = build_filings("determinism-2")
    assert other.documents["annual"][1].data != here.documents["annual"][1].data


def test_both_producers_make_the_documents() -> None:
    producers = set()
    for seed in range(6):
        for _, rendered in build_filings(f"producers-{seed}").documents.values():
            producers.add(b"ReportLab" in rendered.data[:2000] or b"ReportLab" in rendered.data)
    assert producers == {True, False}


@pytest.mark.slow
def test_a_long_filing_runs_past_100_pages_and_is_searchable(tmp_path: Path) -> None:
    filings = build_filings("long-0", long=True, quarterly=False)
    name, rendered = filings.documents["annual"]
    assert rendered.page_count >= 100
    (tmp_path / name).write_bytes(rendered.data)
    document = open_document(tmp_path / name)
    assert document.page_count == rendered.page_count
    pages = [hit.page for hit in document.search("Scheduled debt maturities")]
    assert rendered.pages["debt"] in pages
    text = document.layout_text(rendered.pages["income"])
    assert "Consolidated Statements of Income" in text
    assert f"{filings.company.last.revenue:,}" in text


@pytest.mark.parametrize("seed", [f"tab-{i}" for i in range(10)])
def test_extract_tables_returns_whole_statement_rows_in_every_layout(tmp_path: Path,
                                                                     seed: str) -> None:
    """Ruled grids, rules only, zebra rows, one or two columns, either producer."""
    filings = build_filings(seed, quarterly=False)
    name, rendered = filings.documents["annual"]
    (tmp_path / name).write_bytes(rendered.data)
    document = open_document(tmp_path / name)
    last = filings.company.last
    for key, label, value in (("income", "Revenue", last.revenue),
                              ("balance", "Total assets", last.total_assets),
                              ("cashflow", "Net cash provided by operating activities", last.cfo),
                              ("segments", "Total revenue", last.revenue),
                              ("debt", "Total debt", last.long_debt + last.short_debt)):
        rows = [row for table in document.tables(rendered.pages[key]) for row in table
                if row and row[0] == label]
        printed = f"{value:,}" if value >= 0 else f"({-value:,})"
        assert any(row[1] == printed for row in rows), (key, rows)


def test_a_second_process_reads_the_parsed_text_from_the_disk_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from taskgym.domains.finance import pdf as documents

    filings = build_filings("cache-check", quarterly=False)
    name, rendered = filings.documents["annual"]
    copies = [tmp_path / "a" / name, tmp_path / "b" / name]  # same content, two paths
    for copy in copies:
        copy.parent.mkdir()
        copy.write_bytes(rendered.data)
    first = open_document(copies[0])
    first.layout_text(2)
    documents.close_documents()  # what a fresh process starts with

    def no_parsing(self: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(documents.PdfDocument, "_extract", no_parsing)
    monkeypatch.setattr(documents.PdfDocument, "_lines", no_parsing)
    second = open_document(copies[1])
    assert second is not first and second.texts == first.texts
    assert second.layout_text(2) == first.layout_text(2)
