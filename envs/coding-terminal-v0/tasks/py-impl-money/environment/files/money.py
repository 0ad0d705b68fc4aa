"""Exact money arithmetic. Specification: see the ticket. Standard library only."""
from decimal import Decimal

# ISO 4217 code -> number of minor-unit digits. Do not change.
CURRENCIES = {"USD": 2, "EUR": 2, "GBP": 2, "CHF": 2, "JPY": 0, "KRW": 0, "KWD": 3, "BHD": 3}


class CurrencyMismatch(ValueError):
    pass


class Money:
    def __init__(self, amount, currency):
        raise NotImplementedError
