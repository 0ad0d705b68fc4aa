"""Finance tools on a 100+ page generated filing: generation, first open, warm tool calls.

    PYTHONPATH=src python3 benchmarks/finance_tools.py [--rounds 30]

Prints: generation time per document (short and long, each producer), the first-open cost
of a long filing (text layer and search index for every page) with a cold cache, the first
call of each per-page tool on a page (layout, tables, image: computed, then cached), and the
median / p95 of each tool call through ``env.step`` with a warm cache, against the targets
(each under 100 ms, search under 20 ms). Uses a private cache folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import load_note, median, ms, percentile  # noqa: E402

CACHE = tempfile.mkdtemp(prefix="taskgym-bench-finance-")
os.environ["TASKGYM_CACHE"] = CACHE

import taskgym  # noqa: E402
from taskgym.domains.finance import pdf as document_cache  # noqa: E402
from taskgym.domains.finance.generators import build_filings, write_task  # noqa: E402
from taskgym.domains.finance.generators.questions import all_questions  # noqa: E402


def timed(fn: object, *args: object) -> float:
    start = time.perf_counter()
    fn(*args)  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=30)
    rounds = parser.parse_args().rounds
    print(f"# finance-pdf-v0 tools ({load_note()})\n")
    print("generation per document (render only):")
    for seed, long in (("bench-short-0", False), ("bench-short-1", False),
                       ("long-0", True), ("long-1", True)):
        start = time.perf_counter()
        filings = build_filings(seed, long=long, quarterly=False)
        seconds = time.perf_counter() - start
        rendered = filings.documents["annual"][1]
        producer = "reportlab" if b"ReportLab" in rendered.data else "fpdf2"
        print(f"  {producer:9} {rendered.page_count:4} pages  {len(rendered.data) / 1024:6.0f} KB"
              f"  {seconds:6.2f} s")
    filings = build_filings("long-0", long=True, quarterly=False)
    question = next(q for q in all_questions(filings.company, long=True) if q.family == "lookup")
    root = Path(CACHE) / "tasks"
    write_task(root / "bench-long", filings, question)
    name, rendered = filings.documents["annual"]
    pdf = root / "bench-long" / "environment" / "files" / name
    cold = timed(document_cache.open_document, pdf)
    document_cache.close_documents()  # a new process: the disk cache is there, memory is not
    warm_open = timed(document_cache.open_document, pdf)
    print(f"\nfirst open of a {rendered.page_count}-page filing (text + search index of every "
          f"page): {ms(cold):.0f} ms cold, {ms(warm_open):.1f} ms from the disk cache")

    env = taskgym.make("finance-pdf-v0", tasks=root, max_steps=10_000)
    env.reset(options={"task_id": "bench-long"})
    page = rendered.pages["income"]
    calls = {
        "pdf_info": {},
        "read_page": {"page": page},
        "search": {"query": "scheduled debt maturities"},
        "search (words)": {"query": "capacity europe plants"},
        "extract_tables": {"page": page},
        "page_image": {"page": page},
    }
    print(f"\nfirst call on page {page} (computed, then cached on disk):")
    for label in ("read_page", "extract_tables", "page_image"):
        seconds = timed(env.step, {"tool": label, "args": calls[label]})
        print(f"  {label:15} {ms(seconds):7.1f} ms")
    seconds = timed(env.step, {"tool": "extract_tables", "args": {"page": page + 1}})
    print(f"  extract_tables  {ms(seconds):7.1f} ms on page {page + 1} (pdfplumber already "
          "imported and open)")
    print(f"\nwarm cache, {rounds} calls each through env.step (median / p95, target):")
    for label, args in calls.items():
        tool = label.split(" ")[0]
        samples = [timed(env.step, {"tool": tool, "args": args}) for _ in range(rounds)]
        target = 20.0 if tool == "search" else 100.0
        verdict = "ok" if percentile(samples, 95) * 1000 < target else "OVER"
        print(f"  {label:15} {ms(median(samples)):7.2f} / {ms(percentile(samples, 95)):7.2f} ms"
              f"   (< {target:.0f} ms: {verdict})")
    env.close()
    shutil.rmtree(CACHE, ignore_errors=True)


if __name__ == "__main__":
    main()
