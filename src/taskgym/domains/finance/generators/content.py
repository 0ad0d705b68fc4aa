"""A company's filings as documents: the annual report (10-K style) and a quarterly report.

Each statement, chart and note that a question can point at carries a key (``"income"``,
``"chart_quarters"``, ``"restatement"``...); the renderer reports the page each key lands on,
which become the questions' evidence pages. ``long=True`` adds the dense narrative, notes
and tables of a real filing until the report runs past 100 pages.
"""

from __future__ import annotations

import random

from taskgym.domains.finance.generators.company import Company, Year
from taskgym.domains.finance.generators.render import (
    Block,
    Chart,
    Document,
    Heading,
    PageBreak,
    Paragraph,
    Style,
    Table,
)

__all__ = ["annual_report", "debt_maturities", "eps", "money", "quarterly_report", "regions",
           "style_for"]

_REGIONS = ("North America", "Europe", "Asia Pacific", "Latin America", "Middle East and Africa")
_RISKS = (
    "Demand for our products in the {segment} segment depends on capital spending cycles that we "
    "cannot predict, and a slowdown of {pct}% in orders would reduce our results.",
    "We rely on {count} principal suppliers for components used across {region}; a disruption at "
    "any of them could delay shipments for several quarters.",
    "Changes in foreign exchange rates affected reported results by approximately {pct}% in some "
    "periods, and hedging may not offset future movements.",
    "Our information systems could be compromised, and an incident could interrupt operations at "
    "some of our {count} facilities.",
    "Competition in {region} has intensified, with {count} new entrants in the {segment} market "
    "since {year}, which may pressure prices.",
    "Regulatory changes in {region} could raise compliance costs; we estimate that proposed rules "
    "would affect roughly {pct}% of the products we sell there.",
    "Our indebtedness could limit our flexibility; covenants restrict additional borrowing and "
    "require a minimum interest coverage ratio of {ratio} times.",
    "Acquisitions may not deliver the expected benefits; integration of businesses acquired since "
    "{year} is ongoing in the {segment} segment.",
    "Climate-related events affected {count} of our sites in {year}, and more frequent events could "
    "increase insurance costs by {pct}% or more.",
    "Customer concentration in the {segment} segment is significant: the largest customers account "
    "for a meaningful share of segment sales and may renegotiate terms.",
)
_BUSINESS = (
    "The {segment} segment serves customers in {region} through {count} distribution centers and "
    "a direct sales organization.",
    "Backlog in the {segment} segment at year end covered approximately {months} months of "
    "expected shipments.",
    "We introduced {count} new product families in {year}, mostly for the {segment} market.",
    "Pricing actions in {region} contributed roughly {pct} percentage points to segment growth.",
    "Our plants in {region} operated at about {pct}% of capacity during the fourth quarter.",
    "Management evaluates segment performance on segment operating income, which excludes "
    "corporate costs that are not allocated.",
    "We expect capital expenditures to remain focused on automation and capacity in {region}.",
)


def money(value: int) -> str:
    """``1,234`` or ``(1,234)`` for a negative amount, as statements print them."""
    return f"({-value:,})" if value < 0 else f"{value:,}"


def style_for(rng: random.Random, producer: str) -> Style:
    return Style(producer=producer, columns=rng.choice((1, 2)),  # type: ignore[arg-type]
                 font=rng.choice(("Helvetica", "Times", "Courier")),
                 table=rng.choice(("grid", "lines", "zebra")), font_size=rng.choice((9.0, 9.5, 10.0)))


def regions(company: Company, year: Year) -> dict[str, int]:
    """Last year's revenue by region (sums to revenue)."""
    rng = random.Random(f"regions-{company.name}-{year.year}")
    weights = [rng.uniform(0.2, 1.0) * (3 if i == 0 else 1) for i in range(4)]
    shares = [int(year.revenue * w / sum(weights)) for w in weights]
    shares[0] += year.revenue - sum(shares)
    return dict(zip(_REGIONS[:4], shares, strict=True))


def debt_maturities(company: Company) -> dict[str, int]:
    """Scheduled repayments of the last year's total debt (sums to it)."""
    last = company.last
    total = last.short_debt + last.long_debt
    rng = random.Random(f"debt-{company.name}")
    weights = [1.0] + [rng.uniform(0.3, 1.5) for _ in range(5)]
    parts = [last.short_debt] + [int(last.long_debt * w / sum(weights[1:])) for w in weights[1:]]
    parts[-1] += total - sum(parts)
    labels = [str(last.year + i) for i in range(1, 6)] + ["Thereafter"]
    return dict(zip(labels, parts, strict=True))


def _unit_note(company: Company, extra: str = "") -> str:
    return f"(in {company.unit}{extra})"


def _per_share(value: float) -> str:
    return f"({-value:.2f})" if value < 0 else f"{value:.2f}"


def eps(company: Company, year: Year) -> float:
    """Diluted earnings per share in dollars (net income over diluted shares)."""
    multiplier = 1_000_000 if company.unit == "millions" else 1_000
    return year.net_income * multiplier / (year.shares * 1000)


def annual_report(company: Company, style: Style, long: bool = False, seed: int = 0) -> Document:
    """The 10-K style annual report for the company's last fiscal year."""
    rng = random.Random(f"annual-{seed}")
    last, prior = company.years[-1], company.years[-2]
    shown = company.years[-3:]
    headers = ("", *(f"{y.year}*" if y is prior else str(y.year) for y in reversed(shown)))
    cols = list(reversed(shown))
    name, unit = company.name, company.unit.removesuffix("s")  # "$1,234 million"
    growth = (last.revenue / prior.revenue - 1) * 100
    blocks: list[Block] = [Heading("Part I"), Heading("Item 1. Business", 2), Paragraph(
        f"{name} (the Company) was founded in {company.founded} and is headquartered in "
        f"{company.headquarters}. The Company reports three segments: "
        f"{', '.join(last.segments)}. Our fiscal year ends on December 31.")]
    blocks += _narrative(rng, company, _BUSINESS, 6 if not long else 90)
    blocks += [Heading("Item 1A. Risk Factors", 2)]
    blocks += _narrative(rng, company, _RISKS, 5 if not long else 200)
    blocks += [Heading("Part II"), Heading("Item 7. Management's Discussion and Analysis", 2),
               Paragraph(
        f"Revenue for fiscal {last.year} was ${last.revenue:,} {unit}, "
        f"{'an increase' if growth >= 0 else 'a decrease'} of {abs(growth):.1f}% from "
        f"${prior.revenue:,} {unit} in fiscal {prior.year} (as restated). Operating income was "
        f"${last.operating_income:,} {unit}.", key="mdna_revenue"),
               Paragraph("Revenue by quarter is shown in the chart below.")]
    blocks.append(Chart(f"Quarterly revenue, fiscal {last.year} ({company.unit})",
                        ("Q1", "Q2", "Q3", "Q4"), last.quarters,
                        tuple(f"{q:,}" for q in last.quarters), key="chart_quarters"))
    blocks += [Chart(f"Revenue by segment, fiscal {last.year} ({company.unit})",
                     tuple(last.segments),
                     tuple(last.segments.values()), tuple(f"{v:,}" for v in last.segments.values()),
                     key="chart_segments")]
    seg_rows = [(f"{s} revenue", money(last.segments[s]), money(prior.segments[s]))
                for s in last.segments]
    seg_rows.append(("Total revenue", money(last.revenue), money(prior.revenue)))
    seg_rows += [(f"{s} operating income", money(last.segment_income[s]),
                  money(prior.segment_income[s])) for s in last.segments]
    seg_rows += [("Corporate and unallocated", money(last.corporate_costs),
                  money(prior.corporate_costs)),
                 ("Total operating income", money(last.operating_income),
                  money(prior.operating_income))]
    blocks.append(Table("Segment results", ("", str(last.year), f"{prior.year}*"),
                        tuple(seg_rows), _unit_note(company), "segments", frozenset({3, 8})))
    blocks += _narrative(rng, company, _BUSINESS, 3 if not long else 50)
    if long:
        region = regions(company, last)
        blocks.append(Table("Revenue by geographic region", ("", str(last.year)),
                            tuple((r, money(v)) for r, v in region.items()) +
                            (("Total", money(last.revenue)),), _unit_note(company), "regions",
                            frozenset({4})))
    blocks += [PageBreak(), Heading("Item 8. Financial Statements"), _income(company, headers, cols),
               _balance(company), _cashflow(company, headers, cols),
               Paragraph("* As restated; see Note 2.", small=True)]
    original = prior.revenue + company.restated_delta
    original_net = prior.net_income + company.restated_delta * 3 // 4
    blocks += [Heading("Notes to the Consolidated Financial Statements", 2),
               Heading("Note 1. Basis of presentation", 3),
               Paragraph(f"Amounts are presented in {company.unit} of U.S. dollars, except per-share "
                         "data. Negative amounts are shown in parentheses."),
               Heading("Note 2. Restatement of prior-year results", 3),
               Paragraph(
        f"In fiscal {last.year} the Company corrected the timing of revenue recognized on certain "
        f"multi-element contracts. Fiscal {prior.year} revenue as previously reported was "
        f"${original:,} {unit} and net income as previously reported was ${original_net:,} "
        f"{unit}; the prior-year columns in these statements are restated.", key="restatement")]
    maturities = debt_maturities(company)
    blocks += [Heading("Note 3. Debt", 3), Table(
        "Scheduled debt maturities", ("", "Amount"),
        tuple((k, money(v)) for k, v in maturities.items()) +
        (("Total debt", money(sum(maturities.values()))),), _unit_note(company), "debt",
        frozenset({6}))]
    if long:
        blocks += _long_notes(rng, company)
    title = f"{name} Annual Report on Form 10-K for the fiscal year ended December 31, {last.year}"
    return Document(title, f"Ticker: {company.ticker}. Amounts in {company.unit} of U.S. dollars.",
                    f"{name} - Form 10-K {last.year}", tuple(blocks), style)


def _income(company: Company, headers: tuple[str, ...], cols: list[Year]) -> Table:
    def row(label: str, get: str, sign: int = 1) -> tuple[str, ...]:
        return (label, *(money(sign * getattr(y, get)) for y in cols))

    rows = (row("Revenue", "revenue"), row("Cost of revenue", "cost_of_revenue", -1),
            row("Gross profit", "gross_profit"),
            row("Selling, general and administrative", "sga", -1),
            row("Research and development", "rnd", -1),
            row("Depreciation and amortization", "depreciation", -1),
            row("Operating income", "operating_income"), row("Interest expense", "interest", -1),
            row("Other income (expense), net", "other_income"),
            row("Income before income taxes", "pretax_income"),
            row("Provision for income taxes", "tax", -1), row("Net income", "net_income"),
            ("Diluted shares outstanding (thousands)", *(f"{y.shares:,}" for y in cols)),
            ("Diluted earnings per share ($)", *(_per_share(eps(company, y)) for y in cols)))
    return Table("Consolidated Statements of Income", headers, rows,
                 _unit_note(company, ", except per-share data"), "income",
                 frozenset({2, 6, 9, 11}))


def _balance(company: Company) -> Table:
    last, prior = company.years[-1], company.years[-2]

    def row(label: str, get: str) -> tuple[str, ...]:
        return (label, money(getattr(last, get)), money(getattr(prior, get)))

    rows = (row("Cash and cash equivalents", "cash"), row("Accounts receivable, net", "receivables"),
            row("Inventories", "inventory"), row("Total current assets", "current_assets"),
            row("Property, plant and equipment, net", "ppe"), row("Goodwill", "goodwill"),
            row("Total assets", "total_assets"), row("Accounts payable", "payables"),
            row("Accrued liabilities", "accrued"), row("Short-term debt", "short_debt"),
            row("Total current liabilities", "current_liabilities"),
            row("Long-term debt", "long_debt"), row("Total liabilities", "total_liabilities"),
            row("Common stock and additional paid-in capital", "common"),
            row("Retained earnings", "retained"), row("Total shareholders' equity", "equity"),
            ("Total liabilities and shareholders' equity", money(last.total_assets),
             money(prior.total_assets)))
    return Table("Consolidated Balance Sheets", ("", f"Dec 31, {last.year}",
                                                 f"Dec 31, {prior.year}*"), rows,
                 _unit_note(company), "balance", frozenset({3, 6, 10, 12, 15, 16}))


def _cashflow(company: Company, headers: tuple[str, ...], cols: list[Year]) -> Table:
    def row(label: str, value: object) -> tuple[str, ...]:
        return (label, *(money(value(y)) for y in cols))  # type: ignore[operator]

    previous = {y.year: p for p, y in zip(company.years, company.years[1:], strict=False)}

    def change(get: str, sign: int) -> object:
        return lambda y: sign * (getattr(y, get) - getattr(previous[y.year], get))

    rows = (row("Net income", lambda y: y.net_income),
            row("Depreciation and amortization", lambda y: y.depreciation),
            row("Change in accounts receivable", change("receivables", -1)),
            row("Change in inventories", change("inventory", -1)),
            row("Change in accounts payable", change("payables", 1)),
            row("Change in accrued liabilities", change("accrued", 1)),
            row("Net cash provided by operating activities", lambda y: y.cfo),
            row("Capital expenditures", lambda y: -y.capex),
            row("Acquisitions, net of cash acquired", lambda y: -y.acquisitions),
            row("Net cash used in investing activities", lambda y: y.cfi),
            row("Net borrowings (repayments) of debt", lambda y: y.debt_change),
            row("Dividends paid", lambda y: -y.dividends),
            row("Repurchases of common stock", lambda y: -y.buybacks),
            row("Net cash used in financing activities", lambda y: y.cff),
            row("Net change in cash", lambda y: y.cfo + y.cfi + y.cff),
            row("Cash at end of year", lambda y: y.cash))
    return Table("Consolidated Statements of Cash Flows", headers, rows, _unit_note(company),
                 "cashflow", frozenset({6, 9, 13, 14}))


def quarterly_report(company: Company, style: Style) -> Document:
    """The first-quarter report (10-Q style) of the fiscal year after the last one."""
    last = company.last
    q1_revenue, q1_net = company.next_q1
    prior_net = last.net_income * last.quarters[0] // max(last.revenue, 1)
    year = last.year + 1
    blocks: tuple[Block, ...] = (
        Heading("Part I. Financial Information"),
        Paragraph(f"These condensed statements of {company.name} are unaudited and cover the "
                  f"three months ended March 31, {year}, compared with the same period of "
                  f"{last.year}."),
        Table("Condensed Consolidated Statements of Income (unaudited)",
              ("Three months ended March 31", str(year), str(last.year)),
              (("Revenue", money(q1_revenue), money(last.quarters[0])),
               ("Net income", money(q1_net), money(prior_net))),
              _unit_note(company), "q1_income"),
        Paragraph(f"Revenue for the first quarter of {year} was ${q1_revenue:,} "
                  f"{company.unit.removesuffix('s')}. "
                  "Management expects full-year results to reflect continued demand in the "
                  f"{max(last.segments, key=last.segments.__getitem__)} segment.",
                  key="q1_text"),
    )
    return Document(f"{company.name} Quarterly Report on Form 10-Q for the quarter ended "
                    f"March 31, {year}", f"Amounts in {company.unit} of U.S. dollars.",
                    f"{company.name} - Form 10-Q Q1 {year}", blocks, style)


def _fill(template: str, rng: random.Random, company: Company) -> str:
    return template.format(segment=rng.choice(list(company.last.segments)),
                           region=rng.choice(_REGIONS), pct=rng.randint(2, 30),
                           count=rng.randint(3, 40), year=rng.randint(2010, company.last.year),
                           months=rng.randint(2, 14), ratio=f"{rng.uniform(2, 5):.1f}")


def _narrative(rng: random.Random, company: Company, templates: tuple[str, ...],
               paragraphs: int) -> list[Block]:
    return [Paragraph(" ".join(_fill(rng.choice(templates), rng, company)
                               for _ in range(rng.randint(3, 6)))) for _ in range(paragraphs)]


def _long_notes(rng: random.Random, company: Company) -> list[Block]:
    """The bulk of a real filing: many notes, each with a table of distractor figures."""
    blocks: list[Block] = []
    topics = ("Leases", "Income taxes", "Share-based compensation", "Pensions",
              "Commitments and contingencies", "Fair value measurements", "Intangible assets",
              "Derivatives and hedging", "Inventories detail", "Accrued liabilities detail",
              "Revenue recognition", "Restructuring", "Related parties", "Subsequent events")
    for number, topic in enumerate(topics * 5, start=4):
        part = (number - 4) // len(topics)
        title = f"{topic} (continued, part {part + 1})" if part else topic
        blocks.append(Heading(f"Note {number}. {title}", 3))
        blocks += _narrative(rng, company, _BUSINESS + _RISKS, 6)
        rows = tuple((f"{topic} item {i}", *(money(rng.randint(-40, 400) * (
            1000 if company.unit == "thousands" else 1)) for _ in range(2)))
            for i in range(1, rng.randint(6, 14)))
        blocks.append(Table(f"{title}: components", ("", str(company.last.year),
                                                     str(company.last.year - 1)), rows,
                            _unit_note(company)))
    return blocks
