"""Sets of integers stored as sorted, disjoint half-open intervals. Specification: see the ticket."""


class IntervalSet:
    def __init__(self, intervals=()):
        raise NotImplementedError
