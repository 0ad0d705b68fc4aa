"""Writing finance task folders: documents, question, hidden answer, reference solution.

A task folder (see docs/envs/finance-pdf.md) is::

    instruction.md              the question and how to answer
    task.toml                   [finance] documents = ["annual-report-2024.pdf", ...]
    environment/files/*.pdf     the documents (copied to /app in the sandbox)
    tests/answer.json           hidden: the answer, its scale and evidence pages
    solution/answer.json        what the oracle submits

Generated tasks (``<family>-<seed>``) and the curated set come from the same writer.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from taskgym.core.task_folder import task_toml, write_task_folder
from taskgym.domains.finance.answers import Evidence, GoldAnswer
from taskgym.domains.finance.generators.company import Company, make_company
from taskgym.domains.finance.generators.content import annual_report, quarterly_report, style_for
from taskgym.domains.finance.generators.questions import ANNUAL, FAMILIES, QUARTERLY, Question, all_questions
from taskgym.domains.finance.generators.render import Rendered, render

__all__ = ["GENERATORS", "HOW_TO_ANSWER", "Filings", "build_curated", "build_filings", "generate",
           "write_task"]

GENERATORS = (*FAMILIES, "long")
"""Generated task families; ``long`` asks any question about a 100+ page filing."""

HOW_TO_ANSWER = """\
Answer with `submit(answer, unit, pages)`:
- `answer`: one number and nothing else (no years or other figures), or a short name;
  `not stated` if the documents do not give the answer.
- `unit`: the scale of the number: `units`, `thousands`, `millions`, `billions` or `percent`
  (leave it empty for a name).
- `pages`: the pages you used, e.g. `[5]` (a page of the first document) or
  `["annual-report-2024.pdf:5"]`.
"""


@dataclass(frozen=True)
class Filings:
    """A company and its rendered documents, by role (``annual``, ``quarterly``)."""

    company: Company
    documents: dict[str, tuple[str, Rendered]]


def build_filings(seed: int | str, long: bool = False, quarterly: bool = True) -> Filings:
    """Render the company of ``seed``: its annual report and (optionally) its next 10-Q."""
    company = make_company(seed)
    rng = random.Random(f"layout-{seed}")
    producer = rng.choice(("reportlab", "fpdf2"))
    other = "fpdf2" if producer == "reportlab" else "reportlab"
    year = company.last.year
    annual = annual_report(company, style_for(rng, producer), long=long, seed=rng.randint(0, 10**9))
    documents = {ANNUAL: (f"annual-report-{year}.pdf", render(annual))}
    if quarterly:
        documents[QUARTERLY] = (f"quarterly-report-{year + 1}-q1.pdf",
                                render(quarterly_report(company, style_for(rng, other))))
    return Filings(company, documents)


def write_task(dest: Path, filings: Filings, question: Question, difficulty: str = "medium",
               max_steps: int = 30) -> None:
    """Write one task folder for ``question`` about ``filings`` into ``dest``."""
    roles = [ANNUAL, QUARTERLY] if question.needs_quarterly else [ANNUAL]
    names = [filings.documents[r][0] for r in roles]
    evidence = tuple(Evidence(document=filings.documents[role][0],
                              page=filings.documents[role][1].pages[key])
                     for role, key in question.evidence)
    gold = question.gold.model_copy(update={"evidence": evidence})
    files: dict[str, str | bytes] = {
        "tests/answer.json": gold.model_dump_json(indent=2) + "\n",
        "solution/answer.json": json.dumps(_solution(gold), indent=2) + "\n"}
    listing = []
    for role in roles:
        name, rendered = filings.documents[role]
        files[f"environment/files/{name}"] = rendered.data
        listing.append(f"- `{name}`: {rendered.page_count} pages")
    config = task_toml(difficulty=difficulty, category=question.family,
                       tags=("finance", "pdf", question.family),
                       limits={"max_steps": max_steps, "timeout_sec": 900},
                       tables={"finance": {"documents": names}})
    write_task_folder(dest, f"{question.text}\n\nThe documents are in /app and open to the "
                      "document tools:\n" + "\n".join(listing) + "\n\n" + HOW_TO_ANSWER,
                      config, files)


def _solution(gold: GoldAnswer) -> dict[str, object]:
    pages = [f"{e.document}:{e.page}" for e in gold.evidence]
    if gold.kind == "not_stated":
        return {"answer": "not stated", "unit": "", "pages": pages}
    if gold.kind == "text":
        return {"answer": gold.text, "unit": "", "pages": pages}
    assert gold.value is not None
    text = f"{abs(gold.value):,.{gold.decimals}f}"
    return {"answer": f"({text})" if gold.value < 0 else text, "unit": gold.scale, "pages": pages}


def generate(family: str, seed: int, dest: Path) -> None:
    """Write the generated task ``<family>-<seed>`` (a family of :data:`GENERATORS`) at ``dest``."""
    long = family == "long"
    pool: Sequence[Question] = all_questions(make_company(f"{family}-{seed}"), long=long)
    if not long:
        pool = [q for q in pool if q.family == family]
    question = random.Random(f"question-{family}-{seed}").choice(list(pool))
    filings = build_filings(f"{family}-{seed}", long=long, quarterly=question.needs_quarterly)
    write_task(dest, filings, question, difficulty="hard" if long else "medium",
               max_steps=40 if long else 30)


CURATED_COMPANIES = 6
"""Companies of the curated set; the first four also have a quarterly report (10 PDFs)."""


def build_curated(root: Path) -> int:
    """Write the curated set (about 11 questions per company) under ``root``; returns the count."""
    count = 0
    per_family = {"lookup": 2, "compute": 3, "chart": 2, "multihop": 3, "not_stated": 1}
    for k in range(CURATED_COMPANIES):
        with_quarterly = k < 4
        filings = build_filings(f"curated-{k}", quarterly=with_quarterly)
        rng = random.Random(f"curated-questions-{k}")
        questions = all_questions(filings.company)
        for family, n in per_family.items():
            pool = [q for q in questions if q.family == family
                    and (with_quarterly or not q.needs_quarterly)]
            if family == "multihop" and with_quarterly:  # one question across both reports
                crossing = [q for q in pool if q.needs_quarterly]
                chosen = [rng.choice(crossing)]
                chosen += rng.sample([q for q in pool if q not in chosen], n - 1)
            else:
                chosen = rng.sample(pool, n)
            for question in chosen:
                count += 1
                write_task(root / f"co{k}-{count:02d}-{family.replace('_', '-')}", filings,
                           question, difficulty="easy" if family == "lookup" else "medium")
    return count
