from .cache import memoize_method


class Quoter:
    def __init__(self, table, min_charge=500):
        self.table = table
        self.min_charge = min_charge

    @memoize_method
    def quote(self, zone, weight_kg, express=False):
        cents = self.table.rate(zone, express=express) * weight_kg
        return max(self.min_charge, cents)
