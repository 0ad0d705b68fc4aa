"""Subscription billing periods: calendar helpers, month splitting, anchored cycles, proration."""
from .calendar_utils import is_leap, days_in_month, add_months
from .periods import split_by_month
from .cycles import cycle_starts, cycle_containing
from .proration import prorate
from .invoice import invoice_lines

__all__ = ["is_leap", "days_in_month", "add_months", "split_by_month", "cycle_starts",
           "cycle_containing", "prorate", "invoice_lines"]
