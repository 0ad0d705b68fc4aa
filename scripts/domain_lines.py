"""Host-side lines per domain: what a domain costs beyond the shared machinery.

Counts every line (as ``wc -l`` does: blank lines, comments and docstrings included) of each
``src/taskgym/domains/<domain>/**/*.py`` file, except those under a folder named
``generators/`` (task generators), ``inside/`` or ``grader/`` (scripts that run inside the
sandbox) and ``data/`` (task data). So what is counted is the domain's env, tools, verifier,
settings and whatever other module runs on the host. Prints a table; with ``--max N`` exits
1 when a domain is over ``N`` lines.

    python3 scripts/domain_lines.py [--max 300]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DOMAINS = Path(__file__).resolve().parent.parent / "src" / "taskgym" / "domains"
LEFT_OUT = frozenset({"generators", "inside", "grader", "data"})


def host_files(domain: Path) -> list[Path]:
    """The domain's host-side modules: its .py files outside the folders left out."""
    return sorted(p for p in domain.rglob("*.py")
                  if not LEFT_OUT.intersection(p.relative_to(domain).parts[:-1]))


def count(path: Path) -> int:
    return len(path.read_bytes().splitlines())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max", type=int, default=None, help="fail above this many lines")
    args = parser.parse_args()
    over = []
    print(f"{'domain':<10} {'lines':>6}  files")
    for domain in sorted(p for p in DOMAINS.iterdir() if (p / "__init__.py").is_file()):
        files = host_files(domain)
        total = sum(count(p) for p in files)
        names = ", ".join(f"{p.relative_to(domain)} {count(p)}" for p in files)
        print(f"{domain.name:<10} {total:>6}  {names}")
        if args.max is not None and total > args.max:
            over.append(domain.name)
    if over:
        print(f"over {args.max} lines: {', '.join(over)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
