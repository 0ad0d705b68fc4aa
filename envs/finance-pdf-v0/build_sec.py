"""Write the real-filing tasks of finance-pdf-v0: ``python envs/finance-pdf-v0/build_sec.py``.

Each row below is a question over one of the SEC filings in ``filings/`` (see its README), with
the value as the page prints it, read by hand off the layout text of the evidence page (the
PDF's page number, counting from 1, not the printed folio), in the filing's own scale. The
oracle's answer is written in a chosen surface form (``$53.437 billion``, ``(13,925)``,
``-3.7%``...), checked here to score 1. The PDFs are not copied into the task folders:
``task.toml`` names them with ``library = "../../filings"``, so each is stored once.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import NamedTuple

import pypdfium2

from taskgym.domains.finance.answers import Evidence, GoldAnswer, grade
from taskgym.domains.finance.generators import HOW_TO_ANSWER

HERE = Path(__file__).resolve().parent
LIBRARY = HERE / "filings"


class Row(NamedTuple):
    slug: str
    filing: str
    question: str
    value: float
    scale: str
    decimals: int
    page: int
    display: str
    answer: str
    unit: str


C1, C3 = "COSTCO_2023Q1_EARNINGS", "COSTCO_2023Q3_EARNINGS"
MS, MMM, ADBE, LMT = ("MICROSOFT_2019_10K", "3M_2020_10K", "ADOBE_2019_10K",
                      "LOCKHEEDMARTIN_2022Q2_10Q")
ROWS = [
    Row("costco-q1-net-sales", C1, "What were Costco's net sales for the 12 weeks ended "
        "November 20, 2022, as reported in its consolidated statements of income?",
        53437, "millions", 0, 3, "$53,437 million", "$53.437 billion", ""),
    Row("costco-q1-diluted-eps", C1, "What was Costco's net income per diluted common share "
        "attributable to Costco for the first quarter of fiscal 2023 (12 weeks ended November "
        "20, 2022)?", 3.07, "units", 2, 3, "$3.07", "$3.07", "units"),
    Row("costco-q1-net-sales-growth", C1, "By what percentage did Costco's net sales increase "
        "in the first quarter of fiscal 2023, as stated in the news release?",
        8.1, "percent", 1, 1, "8.1%", "8.1%", "percent"),
    Row("costco-q1-total-assets", C1, "What were Costco's total assets at November 20, 2022?",
        66027, "millions", 0, 3, "$66,027 million", "66,027", "millions"),
    Row("costco-q1-retained-earnings", C1, "What were Costco's retained earnings at November 20, "
        "2022?", 16412, "millions", 0, 4, "$16,412 million", "$16,412 million", ""),
    Row("costco-q1-diluted-shares", C1, "How many diluted shares did Costco use to calculate "
        "net income per share for the 12 weeks ended November 20, 2022?",
        444531, "thousands", 0, 3, "444,531 thousand", "444,531", "thousands"),
    Row("costco-q1-charter-shipping-charge", C1, "What pre-tax charge, primarily related to "
        "downsizing its charter shipping activities, did Costco include in its first-quarter "
        "fiscal 2023 results?", 93, "millions", 0, 1, "$93 million", "$93 million", ""),
    Row("costco-q1-warehouses", C1, "How many warehouses did Costco say it operated at the "
        "time of its first-quarter fiscal 2023 release?", 847, "units", 0, 2, "847", "847",
        "units"),
    Row("costco-q1-ecommerce-comparable", C1, "What was Costco's e-commerce comparable sales "
        "change for the 12 weeks of the first quarter of fiscal 2023, before adjustment for "
        "gasoline prices and foreign exchange?", -3.7, "percent", 1, 1, "-3.7%", "-3.7%", ""),
    Row("costco-q1-total-liabilities-prior", C1, "What were Costco's total liabilities at August "
        "28, 2022, as shown in the balance sheet of its first-quarter fiscal 2023 release?",
        43519, "millions", 0, 4, "$43,519 million", "43.519 billion", ""),
    Row("costco-q3-net-sales-36-weeks", C3, "What were Costco's net sales for the 36 weeks "
        "ended May 7, 2023?", 160280, "millions", 0, 3, "$160,280 million", "$160.28 billion",
        ""),
    Row("costco-q3-membership-fees", C3, "What membership fees did Costco report for the 12 "
        "weeks ended May 7, 2023?", 1044, "millions", 0, 3, "$1,044 million", "1,044",
        "millions"),
    Row("costco-q3-diluted-eps-36-weeks", C3, "What was Costco's diluted net income per common "
        "share attributable to Costco for the 36 weeks ended May 7, 2023?",
        9.30, "units", 2, 3, "$9.30", "9.30", "units"),
    Row("costco-q3-comparable-36-weeks-adjusted", C3, "What was Costco's total-company "
        "comparable sales growth for the first 36 weeks of fiscal 2023, excluding the impacts "
        "of gasoline prices and foreign exchange?", 5.8, "percent", 1, 1, "5.8%", "5.8",
        "percent"),
    Row("costco-q3-warehouses", C3, "How many warehouses did Costco say it operated at the time "
        "of its third-quarter fiscal 2023 release?", 853, "units", 0, 2, "853", "853 warehouses",
        ""),
    Row("costco-q3-interest-income-36-weeks", C3, "What did Costco report as interest income "
        "and other, net, for the 36 weeks ended May 7, 2023?", 295, "millions", 0, 3,
        "$295 million", "$295 million", ""),
    Row("costco-q3-cash", C3, "What were Costco's cash and cash equivalents at May 7, 2023?",
        12493, "millions", 0, 3, "$12,493 million", "12,493", "millions"),
    Row("msft-fy19-total-revenue", MS, "What was Microsoft's total revenue for the fiscal year "
        "ended June 30, 2019?", 125843, "millions", 0, 51, "$125,843 million",
        "$125.843 billion", ""),
    Row("msft-fy19-research-development", MS, "What did Microsoft spend on research and "
        "development in fiscal year 2019, per its income statements?", 16876, "millions", 0,
        51, "$16,876 million", "16,876", "millions"),
    Row("msft-fy19-diluted-eps", MS, "What were Microsoft's diluted earnings per share for "
        "fiscal year 2019?", 5.06, "units", 2, 51, "$5.06", "$5.06", "units"),
    Row("msft-fy19-total-assets", MS, "What were Microsoft's total assets at June 30, 2019?",
        286556, "millions", 0, 53, "$286,556 million", "$286,556 million", ""),
    Row("msft-fy19-capex", MS, "What does Microsoft's cash flows statement show for additions "
        "to property and equipment in fiscal year 2019 (a cash outflow, so negative)?",
        -13925, "millions", 0, 54, "$(13,925) million", "(13,925)", "millions"),
    Row("msft-fy19-gross-margin-pct", MS, "What was Microsoft's gross margin as a percentage of "
        "total revenue in fiscal year 2019, to one decimal place?", 65.9, "percent", 1, 51,
        "65.9%", "65.9%", ""),
    Row("msft-fy19-aoci", MS, "What was Microsoft's accumulated other comprehensive loss at "
        "June 30, 2019, as shown (negative) in the balance sheets?", -340, "millions", 0, 53,
        "$(340) million", "-340", "millions"),
    Row("3m-2020-net-sales", MMM, "What were 3M's net sales for 2020?", 32184, "millions", 0, 57,
        "$32,184 million", "$32.184 billion", ""),
    Row("3m-2020-gain-on-sale", MMM, "What amount does 3M's 2020 consolidated statement of "
        "income show on the line 'Gain on sale of businesses' for 2020 (as printed, negative "
        "in parentheses)?", -389, "millions", 0, 57, "$(389) million", "(389)", "millions"),
    Row("3m-2020-diluted-eps", MMM, "What were 3M's 2020 earnings per share attributable to 3M "
        "common shareholders, diluted?", 9.25, "units", 2, 57, "$9.25", "9.25", "units"),
    Row("3m-2018-capex", MMM, "What does 3M's consolidated statement of cash flows show for "
        "purchases of property, plant and equipment (PP&E) in 2018 (negative, an outflow)?",
        -1577, "millions", 0, 61, "$(1,577) million", "-1,577", "millions"),
    Row("3m-2020-total-equity", MMM, "What was 3M's total equity at December 31, 2020?",
        12931, "millions", 0, 59, "$12,931 million", "12,931 million", ""),
    Row("3m-2020-diluted-shares", MMM, "What was 3M's weighted average number of common shares "
        "outstanding, diluted, in 2020?", 582.2, "millions", 1, 57, "582.2 million",
        "582.2 million", ""),
    Row("adobe-fy19-total-revenue", ADBE, "What was Adobe's total revenue for fiscal year 2019 "
        "(ended November 29, 2019)?", 11171297, "thousands", 0, 58, "$11,171,297 thousand",
        "$11,171,297 thousand", ""),
    Row("adobe-fy19-net-income", ADBE, "What was Adobe's net income for fiscal year 2019?",
        2951458, "thousands", 0, 58, "$2,951,458 thousand", "$2,951,458", "thousands"),
    Row("adobe-fy19-deferred-revenue", ADBE, "What current deferred revenue did Adobe report "
        "at November 29, 2019?", 3377986, "thousands", 0, 57, "$3,377,986 thousand",
        "3,377,986", "thousands"),
    Row("adobe-fy19-interest-expense", ADBE, "What interest expense does Adobe's fiscal 2019 "
        "income statement show (negative, in parentheses)?", -157214, "thousands", 0, 58,
        "$(157,214) thousand", "(157,214)", "thousands"),
    Row("lmt-q2-22-net-sales", LMT, "What were Lockheed Martin's total net sales for the "
        "quarter ended June 26, 2022?", 15446, "millions", 0, 3, "$15,446 million", "15,446",
        "millions"),
    Row("lmt-q2-22-diluted-eps", LMT, "What were Lockheed Martin's diluted earnings per common "
        "share for the quarter ended June 26, 2022?", 1.16, "units", 2, 3, "$1.16", "$1.16",
        "units"),
    Row("lmt-h1-22-dividends-per-share", LMT, "What cash dividends per common share did "
        "Lockheed Martin pay in the six months ended June 26, 2022?", 5.60, "units", 2, 3,
        "$5.60", "5.60", "units"),
    Row("lmt-q2-22-total-assets", LMT, "What were Lockheed Martin's total assets at June 26, "
        "2022?", 51758, "millions", 0, 5, "$51,758 million", "$51.758 billion", ""),
    Row("lmt-q2-22-pension-expense", LMT, "What non-service FAS pension (expense) income did "
        "Lockheed Martin report for the quarter ended June 26, 2022 (negative for an expense)?",
        -1331, "millions", 0, 3, "$(1,331) million", "(1,331)", "millions"),
]


def write(row: Row, dest: Path) -> None:
    name = f"{row.filing}.pdf"
    pages = len(pypdfium2.PdfDocument(str(LIBRARY / name)))
    gold = GoldAnswer(kind="number", value=row.value, scale=row.scale, decimals=row.decimals,
                      evidence=(Evidence(document=name, page=row.page),), display=row.display)
    solution = {"answer": row.answer, "unit": row.unit, "pages": [f"{name}:{row.page}"]}
    result = grade(gold, row.answer, row.unit, solution["pages"], [name])
    assert result.score == 1.0 and result.components["pages"] == 1.0, (row.slug, result)
    dest.mkdir(parents=True)
    (dest / "instruction.md").write_text(
        f"{row.question}\n\nThe documents are in /app and open to the document tools:\n"
        f"- `{name}`: {pages} pages (a public SEC filing)\n\n{HOW_TO_ANSWER}")
    (dest / "task.toml").write_text(
        f'[metadata]\ndifficulty = "{"easy" if pages < 10 else "medium"}"\n'
        f'category = "real-filing"\ntags = ["finance", "pdf", "sec", "real-filing"]\n\n'
        f"[agent]\nmax_steps = 30\ntimeout_sec = 900\n\n"
        f'[finance]\ndocuments = ["{name}"]\nlibrary = "../../filings"\n')
    (dest / "tests").mkdir()
    (dest / "tests" / "answer.json").write_text(gold.model_dump_json(indent=2) + "\n")
    (dest / "solution").mkdir()
    (dest / "solution" / "answer.json").write_text(json.dumps(solution, indent=2) + "\n")


if __name__ == "__main__":
    root = HERE / "tasks"
    for folder in root.glob("sec-*"):
        shutil.rmtree(folder)
    for number, row in enumerate(ROWS, start=1):
        write(row, root / f"sec-{number:02d}-{row.slug}")
    print(f"wrote {len(ROWS)} real-filing tasks to {root}")
