"""Minimal style check: no tabs, no trailing whitespace, lines <= 110 chars.

usage: python3 tools/check_style.py PATH...   (directories are searched for *.py); exit 1 on problems
"""
import pathlib
import sys


def main(paths):
    bad = 0
    for root in paths:
        p = pathlib.Path(root)
        files = sorted(p.rglob("*.py")) if p.is_dir() else [p]
        for f in files:
            for no, line in enumerate(f.read_text().splitlines(), 1):
                problems = []
                if "\t" in line:
                    problems.append("tab")
                if line != line.rstrip():
                    problems.append("trailing whitespace")
                if len(line) > 110:
                    problems.append("line too long")
                for prob in problems:
                    print(f"{f}:{no}: {prob}")
                    bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["."]))
