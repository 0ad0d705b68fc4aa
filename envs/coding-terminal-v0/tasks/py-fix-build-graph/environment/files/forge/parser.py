import re

from .errors import ParseError
from .graph import Graph

_NAME = re.compile(r"^[A-Za-z0-9_./-]+$")


def parse(text):
    """Parse a Forgefile.

        # comment
        target: dep1 dep2
            command one
            command two

    Command lines are indented (spaces or tabs) and belong to the preceding target.
    """
    graph = Graph()
    current = None
    pending = []

    def flush():
        if current is not None:
            name, deps = current
            graph.add(name, deps, pending)

    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            if current is None:
                raise ParseError(lineno, "command outside of a target")
            pending.append(line.strip())
            continue
        if ":" not in line:
            raise ParseError(lineno, "expected 'target: deps'")
        flush()
        head, _, tail = line.partition(":")
        name = head.strip()
        deps = tail.split()
        for n in [name] + deps:
            if not _NAME.match(n):
                raise ParseError(lineno, f"bad name {n!r}")
        if graph.is_target(name) or (current is not None and current[0] == name):
            raise ParseError(lineno, f"duplicate target {name!r}")
        current = (name, deps)
        pending = []
    flush()
    return graph
