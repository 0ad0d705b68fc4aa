"""The financial PDF domain (``finance-pdf-v0``)."""

from taskgym.domains.finance.env import FinanceEnv, documents_of, load_gold
from taskgym.domains.finance.generators import GENERATORS

__all__ = ["GENERATORS", "FinanceEnv", "documents_of", "load_gold"]
