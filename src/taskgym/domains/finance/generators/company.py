"""A seeded synthetic company whose statements obey the accounting identities.

Every amount is an integer in the company's reporting unit (thousands or millions), so
the identities hold exactly in what the documents print:

- gross profit = revenue - cost of revenue; operating income = gross profit - operating
  expenses; net income = pre-tax income - tax; revenue = the sum of the segments';
- total assets = total liabilities + equity, every year;
- cash at year end = cash a year earlier + operating + investing + financing cash flows;
- retained earnings grow by net income less dividends.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Company", "Year", "make_company"]

_NAMES = ("Northwind", "Bluefield", "Castor", "Meridian", "Halvard", "Quarry Lane", "Orion",
          "Tamsin", "Redwater", "Saltmarsh", "Kestrel", "Ashgrove", "Veridian", "Larkspur",
          "Pemberton", "Corvus", "Ironbridge", "Silverlake", "Alder", "Brightmoor")
_SUFFIXES = ("Holdings, Inc.", "Industries Corp.", "Technologies, Inc.", "Group plc",
             "Systems Inc.", "Brands Corp.")
_SEGMENTS = ("Industrial", "Consumer", "Healthcare", "Software", "Services", "Energy",
             "Logistics", "Materials", "Retail", "Aerospace", "Media", "Semiconductors")


@dataclass
class Year:
    """One fiscal year of the three statements (integers in the company's unit)."""

    year: int
    segments: dict[str, int]
    segment_income: dict[str, int]
    quarters: tuple[int, int, int, int]
    cost_of_revenue: int
    sga: int
    rnd: int
    depreciation: int
    interest: int
    other_income: int
    tax: int
    shares: int  # diluted, thousands of shares
    cash: int
    receivables: int
    inventory: int
    ppe: int
    goodwill: int
    payables: int
    accrued: int
    short_debt: int
    long_debt: int
    common: int
    retained: int
    capex: int = 0
    acquisitions: int = 0
    debt_change: int = 0
    dividends: int = 0
    buybacks: int = 0
    cfo: int = 0

    @property
    def revenue(self) -> int:
        return sum(self.segments.values())

    @property
    def corporate_costs(self) -> int:
        """Operating income not allocated to segments (negative: unallocated costs)."""
        return self.operating_income - sum(self.segment_income.values())

    @property
    def gross_profit(self) -> int:
        return self.revenue - self.cost_of_revenue

    @property
    def operating_expenses(self) -> int:
        return self.sga + self.rnd + self.depreciation

    @property
    def operating_income(self) -> int:
        return self.gross_profit - self.operating_expenses

    @property
    def pretax_income(self) -> int:
        return self.operating_income - self.interest + self.other_income

    @property
    def net_income(self) -> int:
        return self.pretax_income - self.tax

    @property
    def current_assets(self) -> int:
        return self.cash + self.receivables + self.inventory

    @property
    def total_assets(self) -> int:
        return self.current_assets + self.ppe + self.goodwill

    @property
    def current_liabilities(self) -> int:
        return self.payables + self.accrued + self.short_debt

    @property
    def total_liabilities(self) -> int:
        return self.current_liabilities + self.long_debt

    @property
    def equity(self) -> int:
        return self.common + self.retained

    @property
    def cfi(self) -> int:
        return -self.capex - self.acquisitions

    @property
    def cff(self) -> int:
        return self.debt_change - self.dividends - self.buybacks


@dataclass
class Company:
    """A company, its years (oldest first) and the facts its documents state."""

    name: str
    ticker: str
    unit: str  # "thousands" or "millions"
    years: list[Year]
    restated_delta: int
    """How much the prior year's revenue changed in the restatement (original - restated)."""
    next_q1: tuple[int, int]
    """(revenue, net income) of the first quarter after the last fiscal year."""
    founded: int
    headquarters: str

    def year(self, year: int) -> Year:
        return next(y for y in self.years if y.year == year)

    @property
    def last(self) -> Year:
        return self.years[-1]


def _quarters(total: int, rng: random.Random) -> tuple[int, int, int, int]:
    weights = [rng.uniform(0.8, 1.25) for _ in range(4)]
    shares = [int(total * w / sum(weights)) for w in weights]
    return shares[0], shares[1], shares[2], total - sum(shares[:3])


def make_company(seed: int | str, n_years: int = 4) -> Company:
    """The company for ``seed`` (same seed, same company)."""
    rng = random.Random(f"finance-company-{seed}")
    name = f"{rng.choice(_NAMES)} {rng.choice(_SUFFIXES)}"
    ticker = "".join(w[0] for w in name.split()[:2]).upper() + rng.choice("XQZKV")
    unit = rng.choice(("thousands", "millions"))
    scale = 1 if unit == "millions" else 1000
    segment_names = rng.sample(_SEGMENTS, 3)
    base = {s: int(rng.uniform(150, 2500) * scale) for s in segment_names}
    growth = {s: rng.uniform(-0.06, 0.18) for s in segment_names}
    margin = {s: rng.uniform(0.05, 0.3) for s in segment_names}
    gross_margin = rng.uniform(0.28, 0.62)
    first_year = rng.randint(2016, 2022)
    years: list[Year] = []
    prev: Year | None = None
    for i in range(n_years):
        segments = {s: int(base[s] * (1 + growth[s] + rng.uniform(-0.03, 0.03)) ** i)
                    for s in segment_names}
        revenue = sum(segments.values())
        cost = int(revenue * (1 - gross_margin + rng.uniform(-0.02, 0.02)))
        sga = int(revenue * rng.uniform(0.08, 0.16))
        rnd = int(revenue * rng.uniform(0.02, 0.09))
        ppe_prev = prev.ppe if prev else int(revenue * rng.uniform(0.3, 0.6))
        depreciation = int(ppe_prev * rng.uniform(0.07, 0.12))
        debt_prev = prev.long_debt + prev.short_debt if prev else int(revenue * rng.uniform(0.2, 0.5))
        interest = int(debt_prev * rng.uniform(0.03, 0.07))
        other = int(revenue * rng.uniform(-0.01, 0.015))
        operating = revenue - cost - sga - rnd - depreciation
        pretax = operating - interest + other
        tax = int(pretax * rng.uniform(0.18, 0.27)) if pretax > 0 else 0
        net = pretax - tax
        seg_income = {s: int(segments[s] * margin[s]) for s in segment_names}
        quarters = _quarters(revenue, rng)
        receivables = int(revenue * rng.uniform(0.1, 0.2))
        inventory = int(cost * rng.uniform(0.08, 0.2))
        payables = int(cost * rng.uniform(0.08, 0.15))
        accrued = int(revenue * rng.uniform(0.03, 0.07))
        shares = int(rng.uniform(40, 400) * 1000) if prev is None else int(
            prev.shares * rng.uniform(0.97, 1.01))
        if prev is None:
            cash = int(revenue * rng.uniform(0.08, 0.2))
            goodwill = int(revenue * rng.uniform(0.05, 0.3))
            short_debt = int(debt_prev * 0.1)
            long_debt = debt_prev - short_debt
            retained = int(revenue * rng.uniform(0.2, 0.6))
            liabilities = payables + accrued + short_debt + long_debt
            assets = cash + receivables + inventory + ppe_prev + goodwill
            common = assets - liabilities - retained
            if common < revenue // 20:  # keep equity positive: hold more cash
                cash += revenue // 20 - common
                common = revenue // 20
            years.append(Year(first_year, segments, seg_income, quarters,
                              cost, sga, rnd, depreciation, interest, other, tax, shares, cash,
                              receivables, inventory, ppe_prev, goodwill, payables, accrued,
                              short_debt, long_debt, common, retained))
            prev = years[-1]
            continue
        capex = int(revenue * rng.uniform(0.03, 0.08))
        acquisitions = int(revenue * rng.uniform(0.0, 0.05)) if rng.random() < 0.4 else 0
        dividends = max(0, int(net * rng.uniform(0.1, 0.4)))
        buybacks = int(revenue * rng.uniform(0.0, 0.02))
        cfo = (net + depreciation - (receivables - prev.receivables)
               - (inventory - prev.inventory) + (payables - prev.payables)
               + (accrued - prev.accrued))
        debt_change = int(debt_prev * rng.uniform(-0.1, 0.1))
        cash = prev.cash + cfo - capex - acquisitions + debt_change - dividends - buybacks
        floor = int(revenue * 0.05)
        if cash < floor:  # borrow what keeps a cash floor
            debt_change += floor - cash
            cash = floor
        short_debt = prev.short_debt
        long_debt = prev.long_debt + debt_change
        years.append(Year(
            first_year + i, segments, seg_income, quarters, cost, sga, rnd,
            depreciation, interest, other, tax, shares, cash, receivables, inventory,
            prev.ppe + capex - depreciation, prev.goodwill + acquisitions, payables, accrued,
            short_debt, long_debt, prev.common - buybacks, prev.retained + net - dividends,
            capex, acquisitions, debt_change, dividends, buybacks, cfo))
        prev = years[-1]
    last = years[-1]
    restated_delta = max(1, int(years[-2].revenue * rng.uniform(0.004, 0.02)))
    q1_revenue = int(last.quarters[0] * rng.uniform(0.95, 1.15))
    q1_net = int(q1_revenue * last.net_income / max(last.revenue, 1) * rng.uniform(0.8, 1.2))
    return Company(name, ticker, unit, years, restated_delta, (q1_revenue, q1_net),
                   founded=rng.randint(1950, 2005),
                   headquarters=rng.choice(("Denver, Colorado", "Columbus, Ohio", "Austin, Texas",
                                            "Raleigh, North Carolina", "Portland, Oregon",
                                            "Minneapolis, Minnesota", "Hartford, Connecticut")))
