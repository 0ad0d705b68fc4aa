"""Run the taskgym benchmarks (W1-W4 and vector envs) and print one summary table.

    python3 benchmarks/run_all.py [--quick] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import idle_memory  # noqa: E402
import parallel_steps  # noqa: E402
import reset_latency  # noqa: E402
import step_latency  # noqa: E402
import vector_steps  # noqa: E402
from _common import HEADERS, Row, load_note, markdown, table  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    parser.add_argument("--markdown", metavar="FILE", help="also write the summary as Markdown")
    args = parser.parse_args()
    started = time.perf_counter()
    load_start = load_note()
    rows: list[Row] = []
    rows += step_latency.run(args.quick)
    rows += reset_latency.run(args.quick)
    rows += idle_memory.run(args.quick)
    rows += parallel_steps.run(args.quick)
    rows += vector_steps.run(args.quick)
    cells = [r.cells() for r in rows]
    passed = sum(r.passed for r in rows)
    machine = (f"{platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, Python "
               f"{platform.python_version()}, Linux {platform.release()}")
    notes = [f"machine: {machine}",
             f"at start: {load_start}; at end: {load_note()}",
             f"{passed}/{len(rows)} targets met; {time.perf_counter() - started:.0f} s"
             + (" (--quick)" if args.quick else "")]
    print("\n== summary ==")
    print(table(HEADERS, cells))
    for note in notes:
        print(note)
    if args.markdown:
        stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
        text = (f"# taskgym benchmarks ({stamp})\n\n{markdown(HEADERS, cells)}\n\n"
                + "".join(f"- {n}\n" for n in notes))
        Path(args.markdown).write_text(text)
        print(f"wrote {args.markdown}")


if __name__ == "__main__":
    main()
