from .cache import memoize_method, clear_cache


class RateTable:
    """Per-kg shipping rates (in cents) by destination zone."""

    def __init__(self, carrier, rates, fuel_surcharge_pct=0):
        self.carrier = carrier
        self._rates = dict(rates)
        self.fuel_surcharge_pct = fuel_surcharge_pct
        self.lookups = 0  # how many times the underlying table was consulted

    @memoize_method
    def rate(self, zone, express=False):
        self.lookups += 1
        base = self._rates[zone]
        if express:
            base = base * 2
        return base + base * self.fuel_surcharge_pct // 100

    def update(self, zone, cents):
        self._rates[zone] = cents
        clear_cache(self, "rate")
