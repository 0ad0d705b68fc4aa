import os
import sys

from .builder import Builder
from .errors import ForgeError
from .parser import parse


def main(argv=None):
    """forge [GOAL]: build GOAL (default: the first target in ./Forgefile)."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        with open("Forgefile", encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        print("forge: no Forgefile", file=sys.stderr)
        return 2
    try:
        graph = parse(text)
        if not graph.targets:
            print("forge: no targets", file=sys.stderr)
            return 2
        goal = argv[0] if argv else next(iter(graph.targets))
        if not graph.is_target(goal):
            print(f"forge: unknown target: {goal}", file=sys.stderr)
            return 2
        ran = Builder(graph, os.getcwd()).build(goal)
    except ForgeError as exc:
        print(f"forge: {exc}", file=sys.stderr)
        return 2
    for name in ran:
        print(f"built {name}")
    if not ran:
        print("up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
