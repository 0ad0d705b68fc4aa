"""The document tools on real SEC filings (envs/finance-pdf-v0/filings): pages printed by
browsers and HTML converters, whose PDFs place every glyph on its own, read like the page."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

import taskgym
from taskgym.core.task import load_task
from taskgym.core.tool import Tool
from taskgym.domains.finance.answers import GoldAnswer
from taskgym.domains.finance.env import documents_of
from taskgym.domains.finance.pdf import open_document
from taskgym.domains.finance.pdf_tools import SearchArgs
from taskgym.domains.finance.tools import finance_tools
from taskgym.errors import ConfigError
from taskgym.evaluation import EpisodeRecord
from taskgym.paths import envs_dir
from taskgym.sandbox import Session

FILINGS = envs_dir() / "finance-pdf-v0" / "filings"
NUMBER = re.compile(r"\d(?:[\d,.]*\d)?")
SPELLED_OUT = re.compile(r"(?:\b\w ){4,}")  # "P u r c h a s e s"

# (filing, page, producer): statement pages of each glyph-by-glyph producer shipped here
PAGES = [
    ("3M_2020_10K", 61, "Qt 4.8.7 (wkhtmltopdf)"),
    ("MICROSOFT_2019_10K", 54, "Skia/PDF"),
    ("COSTCO_2023Q1_EARNINGS", 3, "EO.Pdf"),
    ("COSTCO_2023Q3_EARNINGS", 4, "EO.Pdf"),
    ("ADOBE_2019_10K", 61, "Wdesk"),
    ("LOCKHEEDMARTIN_2022Q2_10Q", 4, "KS - PDF Engine"),
]


def _filing(stem: str) -> Path:
    return FILINGS / f"{stem}.pdf"


@pytest.mark.parametrize(("stem", "page", "producer"), PAGES)
def test_read_page_holds_every_number_of_the_page_whole(stem: str, page: int,
                                                        producer: str) -> None:
    doc = open_document(_filing(stem))
    assert producer.split()[0] in doc.metadata.get("Producer", "")
    layout = doc.layout_text(page)
    wanted = Counter(NUMBER.findall(doc.texts[page - 1]))  # pdfium's plain text, in order
    found = Counter(NUMBER.findall(layout))
    assert sum(wanted.values()) >= 20
    assert wanted - found == Counter()
    assert not SPELLED_OUT.search(layout), SPELLED_OUT.search(layout)


def test_a_statement_row_reads_as_printed_on_a_wkhtmltopdf_page() -> None:
    layout = open_document(_filing("3M_2020_10K")).layout_text(61)
    row = next(line for line in layout.splitlines() if "Purchases of property" in line)
    assert row.split()[-3:] == ["(1,501)", "(1,699)", "(1,577)"]
    assert "Purchases of property, plant and equipment (PP&E)" in row


@pytest.mark.parametrize(("stem", "page", "label", "figures"), [
    ("3M_2020_10K", 61, "Purchases of property, plant and equipment (PP&E)",
     ["(1,501)", "(1,699)", "(1,577)"]),
    ("MICROSOFT_2019_10K", 54, "Net income", ["$ 39,240", "$ 16,571", "$ 25,489"]),
    ("MICROSOFT_2019_10K", 54, "Additions to property and equipment",
     ["(13,925)", "(11,632)", "(8,129)"]),
    ("COSTCO_2023Q1_EARNINGS", 3, "Selling, general and administrative", ["4,917", "4,718"]),
])
def test_extract_tables_cells_hold_whole_numbers(stem: str, page: int, label: str,
                                                 figures: list[str]) -> None:
    tables = open_document(_filing(stem)).tables(page)
    rows = [row for table in tables for row in table if row and row[0].endswith(label)]
    assert rows, f"no row {label!r} in {tables}"
    assert rows[0][1:] == figures
    for table in tables:
        for row in table:
            for cell in row[1:]:
                assert not re.search(r"\d\s+\(?\d|^,|\d,$", cell), (cell, row)


def _search_tool(*stems: str) -> Tool:
    paths = [_filing(stem) for stem in stems]
    tools = finance_tools(lambda: paths, _no_session, lambda: 10.0)
    return next(tool for tool in tools if tool.name == "search")


def _no_session() -> Session:
    raise AssertionError("search needs no sandbox")


def _pages(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\.pdf page (\d+) \(score", text)]


def test_search_ranks_every_matching_page_says_how_many_and_pages_on() -> None:
    doc = open_document(_filing("ADOBE_2019_10K"))
    hits = doc.search("net income")
    assert len(hits) > 10
    in_page_order = sorted(h.page for h in hits)
    ranked = [h.page for h in hits]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    late = set(ranked[:10]) - set(in_page_order[:10])
    assert late, "ranking should bring a page from past the first ten in page order"
    search = _search_tool("ADOBE_2019_10K")
    first = search.run(SearchArgs(query="net income")).text
    assert first.startswith(f"{len(hits)} pages match 'net income'")
    assert _pages(first) == ranked[:10]
    assert f"[{len(hits) - 10} more: search again with offset=10]" in first
    rest = search.run(SearchArgs(query="net income", offset=10)).text
    assert _pages(rest) == ranked[10:20]
    assert "none past offset" in search.run(SearchArgs(query="net income", offset=500)).text


def test_search_falls_back_to_all_then_some_words_and_ranks_across_documents() -> None:
    search = _search_tool("COSTCO_2023Q1_EARNINGS", "COSTCO_2023Q3_EARNINGS")
    text = search.run(SearchArgs(query="merchandise costs")).text
    assert "with the phrase" in text
    assert "COSTCO_2023Q1_EARNINGS.pdf" in text and "COSTCO_2023Q3_EARNINGS.pdf" in text
    words = search.run(SearchArgs(query="costs merchandise")).text
    assert "with all words" in words
    some = search.run(SearchArgs(query="merchandise zebraunicorn")).text
    assert "with some words" in some
    assert "no page mentions" in search.run(SearchArgs(query="zebraunicorn")).text


TASKS = envs_dir() / "finance-pdf-v0" / "tasks"
SEC_TASKS = sorted(p.name for p in TASKS.glob("sec-*") if (p / "instruction.md").is_file())
COMPUTED = {"msft-fy19-gross-margin-pct"}  # derived from two printed figures


def test_at_least_30_real_filing_questions_over_the_shipped_filings() -> None:
    assert len(SEC_TASKS) >= 30
    used = {json.loads((TASKS / t / "tests" / "answer.json").read_text())["evidence"][0]
            ["document"] for t in SEC_TASKS}
    assert used == {p.name for p in FILINGS.glob("*.pdf")}
    scales = {json.loads((TASKS / t / "tests" / "answer.json").read_text())["scale"]
              for t in SEC_TASKS}
    assert scales == {"units", "thousands", "millions", "percent"}
    assert not list(TASKS.glob("sec-*/environment/files/*.pdf"))  # stored once, in filings/


@pytest.mark.parametrize("task_id", [t for t in SEC_TASKS if t.split("-", 2)[2] not in COMPUTED])
def test_each_gold_value_is_printed_on_its_evidence_page(task_id: str) -> None:
    gold = GoldAnswer.model_validate_json((TASKS / task_id / "tests" / "answer.json").read_text())
    assert gold.value is not None and len(gold.evidence) == 1
    evidence = gold.evidence[0]
    layout = open_document(FILINGS / evidence.document).layout_text(evidence.page)
    printed = f"{abs(gold.value):,.{gold.decimals}f}"
    if gold.value < 0:
        printed = f"-{printed}" if gold.scale == "percent" else f"({printed})"
    assert re.search(rf"(?<![\d,.]){re.escape(printed)}(?![\d]|,\d)", layout), (printed, task_id)


@pytest.mark.parametrize("sandbox", [pytest.param("local", marks=pytest.mark.sandbox),
                                     pytest.param("docker", marks=pytest.mark.docker)])
def test_a_real_filing_task_puts_its_library_filing_in_the_sandbox(
        sandbox: str, oracle_then_null: Callable[..., EpisodeRecord]) -> None:
    env = taskgym.make("finance-pdf-v0", sandbox=sandbox)
    try:
        oracle_then_null(env, task_id=SEC_TASKS[0])
        env.reset(options={"task_id": SEC_TASKS[0]})
        obs, *_, info = env.step({"tool": "python", "args": {"code": (
            "import os\nprint(sorted(os.listdir('/app')))\n"
            "print(os.path.getsize('/app/COSTCO_2023Q1_EARNINGS.pdf'))")}})
        assert info["exit_code"] == 0, obs["text"]
        size = (FILINGS / "COSTCO_2023Q1_EARNINGS.pdf").stat().st_size
        assert "['COSTCO_2023Q1_EARNINGS.pdf']" in obs["text"] and f"\n{size}\n" in obs["text"]
        text = env.step({"tool": "read_page", "args": {"page": 3}})[0]["text"]
        assert "53,437" in text
    finally:
        env.close()


def test_a_task_whose_library_filing_is_missing_gets_a_clear_error(tmp_path: Path) -> None:
    task = tmp_path / "sec-missing"
    shutil.copytree(TASKS / SEC_TASKS[0], task)
    (task / "task.toml").write_text((task / "task.toml").read_text().replace(
        'library = "../../filings"', 'library = "../nowhere"'))
    with pytest.raises(ConfigError, match="lists documents missing from .*nowhere"):
        documents_of(load_task(task, "finance"))
