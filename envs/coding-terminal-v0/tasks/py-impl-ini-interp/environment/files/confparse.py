"""INI-style configuration parser with ${...} interpolation. Specification: see the ticket."""


class ParseError(ValueError):
    def __init__(self, lineno, message):
        super().__init__(f"line {lineno}: {message}")
        self.lineno = lineno


class InterpolationError(ValueError):
    pass


def parse(text):
    raise NotImplementedError


def load(path):
    raise NotImplementedError
