"""Questions about a company's filings, each with its exact answer and evidence.

Families: ``lookup`` (one printed figure), ``compute`` (growth rates, margins, ratios that
combine statements), ``chart`` (a figure printed only as a chart label, or a chart figure
combined with a statement), ``multihop`` (a note and a statement, or the annual and the
quarterly report) and ``not_stated`` (the documents do not give the answer). Answers are
computed from the figures as printed, so rounding in the documents is the rounding here.
"""

from __future__ import annotations

from dataclasses import dataclass

from taskgym.domains.finance.answers import GoldAnswer
from taskgym.domains.finance.generators.company import Company
from taskgym.domains.finance.generators.content import debt_maturities, eps, regions

__all__ = ["FAMILIES", "Question", "all_questions"]

FAMILIES = ("lookup", "compute", "chart", "multihop", "not_stated")
ANNUAL, QUARTERLY = "annual", "quarterly"


@dataclass(frozen=True)
class Question:
    family: str
    text: str
    gold: GoldAnswer
    """The answer; its evidence is filled in once the documents are rendered."""
    evidence: tuple[tuple[str, str], ...]
    """(document role, block key) pairs holding the answer."""

    @property
    def needs_quarterly(self) -> bool:
        return any(role == QUARTERLY for role, _ in self.evidence)


def _amount(family: str, text: str, value: int, company: Company,
            *evidence: tuple[str, str]) -> Question:
    unit = company.unit.removesuffix("s")
    display = f"${value:,} {unit}" if value >= 0 else f"$({-value:,}) {unit}"
    return Question(family, text, GoldAnswer(kind="number", value=value, scale=company.unit,
                                             display=display), evidence)


def _ratio(family: str, text: str, value: float, percent: bool,
           *evidence: tuple[str, str]) -> Question:
    decimals = 1 if percent else 2
    rounded = round(value, decimals)
    display = f"{rounded:.{decimals}f}{'%' if percent else ''}"
    return Question(family, text, GoldAnswer(
        kind="number", value=rounded, scale="percent" if percent else "units", decimals=decimals,
        display=display), evidence)


def all_questions(company: Company, long: bool = False) -> list[Question]:
    """Every question the generator can ask about this company's filings."""
    c, last, prior = company, company.years[-1], company.years[-2]
    y, p = last.year, prior.year
    name = c.name
    income, balance, cash = (ANNUAL, "income"), (ANNUAL, "balance"), (ANNUAL, "cashflow")
    seg, chart = (ANNUAL, "segments"), (ANNUAL, "chart_quarters")
    top = max(last.segments, key=last.segments.__getitem__)
    low = min(last.segments, key=last.segments.__getitem__)
    best_quarter = max(range(4), key=lambda i: last.quarters[i])
    q1_revenue, _ = c.next_q1
    maturities = debt_maturities(c)
    out = [
        _amount("lookup", f"What was {name}'s total revenue in fiscal {y}?", last.revenue, c, income),
        _amount("lookup", f"What was {name}'s net income in fiscal {p}, as shown (restated) in "
                f"the {y} annual report?", prior.net_income, c, income),
        _amount("lookup", f"What were {name}'s total assets at December 31, {y}?",
                last.total_assets, c, balance),
        _amount("lookup", f"What was {name}'s net cash provided by operating activities in "
                f"fiscal {y}?", last.cfo, c, cash),
        _amount("lookup", f"What was total shareholders' equity of {name} at December 31, {p}?",
                prior.equity, c, balance),
        _amount("lookup", f"What operating income did the {low} segment report in fiscal {y}?",
                last.segment_income[low], c, seg),
        _ratio("lookup", f"What were {name}'s diluted earnings per share in fiscal {y}, in "
               "dollars?", eps(c, last), False, income),
        _ratio("compute", f"By what percentage did {name}'s revenue grow from fiscal {p} "
               f"(restated) to fiscal {y}?", (last.revenue / prior.revenue - 1) * 100, True,
               income),
        _ratio("compute", f"What was {name}'s gross margin in fiscal {y}, in percent?",
               last.gross_profit / last.revenue * 100, True, income),
        _ratio("compute", f"What was {name}'s operating margin in fiscal {p}, in percent?",
               prior.operating_income / prior.revenue * 100, True, income),
        _ratio("compute", f"What was {name}'s current ratio (current assets divided by current "
               f"liabilities) at December 31, {y}?", last.current_assets /
               last.current_liabilities, False, balance),
        _ratio("compute", f"What was {name}'s ratio of total debt (short-term plus long-term) to "
               f"total shareholders' equity at December 31, {y}?",
               (last.short_debt + last.long_debt) / last.equity, False, balance),
        _amount("compute", f"What was {name}'s free cash flow (operating cash flow minus capital "
                f"expenditures) in fiscal {y}?", last.cfo - last.capex, c, cash),
        _ratio("compute", f"What was {name}'s return on average shareholders' equity in fiscal "
               f"{y} (net income divided by the average of opening and closing equity), in "
               "percent?", last.net_income / ((last.equity + prior.equity) / 2) * 100, True,
               income, balance),
        _ratio("compute", f"What was {name}'s net income in fiscal {y} as a percentage of its "
               f"total assets at year end?", last.net_income / last.total_assets * 100, True,
               income, balance),
        _amount("chart", f"According to the quarterly revenue chart in {name}'s {y} annual "
                f"report, what was revenue in the third quarter of fiscal {y}?",
                last.quarters[2], c, chart),
        _amount("chart", f"According to the quarterly revenue chart, what was {name}'s revenue "
                f"in the second quarter of fiscal {y}?", last.quarters[1], c, chart),
        _ratio("chart", f"What share of {name}'s fiscal {y} revenue, in percent, was earned in "
               "the fourth quarter? Use the quarterly chart and the income statement.",
               last.quarters[3] / last.revenue * 100, True, chart, income),
        Question("chart", f"In which quarter of fiscal {y} was {name}'s revenue highest, "
                 "according to the quarterly revenue chart? Answer Q1, Q2, Q3 or Q4.",
                 GoldAnswer(kind="text", text=f"Q{best_quarter + 1}",
                            aliases=(f"quarter {best_quarter + 1}",),
                            display=f"Q{best_quarter + 1}"), (chart,)),
        Question("chart", f"Which segment had the largest revenue in fiscal {y}? Answer with "
                 "the segment name.", GoldAnswer(kind="text", text=top,
                                                aliases=(f"{top} segment",), display=top),
                 ((ANNUAL, "chart_segments"),)),
        _amount("multihop", f"By how much did the restatement change {name}'s fiscal {p} "
                "revenue? Give the amount as originally reported minus as restated.",
                c.restated_delta, c, (ANNUAL, "restatement"), income),
        _amount("multihop", f"What was {name}'s fiscal {p} revenue as originally reported, "
                "before the restatement?", prior.revenue + c.restated_delta, c,
                (ANNUAL, "restatement")),
        _ratio("multihop", f"What percentage of {name}'s fiscal {y} revenue came from the {top} "
               "segment?", last.segments[top] / last.revenue * 100, True, seg),
        _ratio("multihop", f"What was the operating margin of the {top} segment in fiscal {y}, "
               "in percent?", last.segment_income[top] / last.segments[top] * 100, True, seg),
        _amount("multihop", f"How much of {name}'s debt outstanding at December 31, {y} is "
                f"scheduled to be repaid in {y + 1} and {y + 2} together?",
                maturities[str(y + 1)] + maturities[str(y + 2)], c, (ANNUAL, "debt")),
        _ratio("multihop", f"{name}'s revenue in the first quarter of fiscal {y + 1} was what "
               f"percentage of its full fiscal {y} revenue? Use the quarterly report and the "
               "annual report.", q1_revenue / last.revenue * 100, True,
               (QUARTERLY, "q1_income"), income),
        _ratio("multihop", f"By what percentage did {name}'s first-quarter revenue grow from "
               f"fiscal {y} to fiscal {y + 1}? Use the {y + 1} quarterly report.",
               (q1_revenue / last.quarters[0] - 1) * 100, True, (QUARTERLY, "q1_income")),
    ]
    if long:
        region = regions(c, last)
        first = next(iter(region))
        out.append(_ratio("multihop", f"What percentage of {name}'s fiscal {y} revenue came "
                          f"from {first}?", region[first] / last.revenue * 100, True,
                          (ANNUAL, "regions")))
    not_stated = (
        f"How many employees did {name} have at December 31, {y}?",
        f"What was {name}'s revenue in fiscal {c.years[0].year - 2}?",
        f"What research and development expense did the {top} segment report in fiscal {y}?",
        f"What fees did {name} pay its independent auditor for fiscal {y}?",
    )
    out += [Question("not_stated", text,
                     GoldAnswer(kind="not_stated", display="not stated"), ())
            for text in not_stated]
    return out
