"""How faithfully ``read_page`` and ``extract_tables`` read real filings, per PDF producer.

    PYTHONPATH=src python3 benchmarks/finance_layout.py [--filings DIR] [--table-pages 8]

For every page of every PDF in DIR (default: ``../shared/data/filings`` beside the checkout),
the numbers of pdfium's plain text of the page (``get_text_range``, which reads the glyphs in
order without placing them) are looked for in the page's layout text as ``read_page`` returns
it, as a multiset: ``1,027`` must appear whole, as often as the plain text has it. The table
prints, per producer, the share found, the pages read and the layout time per page. For tables,
on the ``--table-pages`` pages of each filing with the most numbers, it counts the cells of
``extract_tables`` that hold a broken number (digits split by a space, a trailing comma, a
lone comma) against all figure cells (digits, separators, signs, currency only). Uses a private cache folder.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, load_note  # noqa: E402

os.environ["TASKGYM_CACHE"] = tempfile.mkdtemp(prefix="taskgym-bench-layout-")

from taskgym.domains.finance.pdf import open_document  # noqa: E402

NUMBER = re.compile(r"\d(?:[\d,.]*\d)?")
FIGURE = re.compile(r"[\s$€£()\d.,%*\u2014\u2013-]*\d[\s$€£()\d.,%*\u2014\u2013-]*")
BROKEN = re.compile(r"\d\s+\(?\d|\d,$|^\s*,|\s,\d")
"""A figure cell holding a number broken apart: digits split by a space, a stray comma."""


def numbers(text: str) -> Counter[str]:
    return Counter(NUMBER.findall(text))


def producer_of(metadata: dict[str, str]) -> str:
    producer = metadata.get("Producer", "") or "not stated"
    return re.split(r"[ (]", producer.replace("Skia/PDF", "Skia/PDF ").replace("itext-", "iText "),
                    maxsplit=1)[0] + (" (" + metadata["Creator"].split()[0] + ")"
                                      if "Qt" in producer and metadata.get("Creator") else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--filings", type=Path, default=ROOT.parent / "shared" / "data" / "filings")
    parser.add_argument("--table-pages", type=int, default=8)
    args = parser.parse_args()
    pdfs = sorted(args.filings.glob("*.pdf"))
    if not pdfs:
        sys.exit(f"no PDF in {args.filings}: pass --filings DIR (the SEC filings of shared/data)")
    print(f"# read_page and extract_tables on real filings ({load_note()})\n")
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    pages: Counter[str] = Counter()
    seconds: Counter[str] = Counter()
    cells: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    files: dict[str, list[str]] = defaultdict(list)
    worst: list[tuple[float, str, int]] = []
    for pdf in pdfs:
        doc = open_document(pdf)
        name = producer_of(doc.metadata)
        files[name].append(pdf.stem)
        for page in range(1, doc.page_count + 1):
            start = time.perf_counter()
            layout = numbers(doc.layout_text(page))
            seconds[name] += time.perf_counter() - start
            want = numbers(doc.texts[page - 1])
            hit = sum(min(n, layout[k]) for k, n in want.items())
            found[name][0] += hit
            found[name][1] += sum(want.values())
            pages[name] += 1
            if want:
                worst.append((hit / sum(want.values()), pdf.stem, page))
        dense = sorted(range(1, doc.page_count + 1),
                       key=lambda p: -sum(numbers(doc.texts[p - 1]).values()))
        for page in dense[:args.table_pages]:
            for table in doc.tables(page):
                for row in table:
                    for cell in row:
                        if FIGURE.fullmatch(cell):
                            cells[name][1] += 1
                            cells[name][0] += bool(BROKEN.search(cell))
    print("| producer | filings | pages | numbers found | layout ms/page | figure cells "
          "with a broken number |")
    print("|---|---|---|---|---|---|")
    for name in sorted(found, key=lambda n: found[n][0] / max(1, found[n][1])):
        hit, total = found[name]
        broken, with_digits = cells[name]
        print(f"| {name} | {len(files[name])} | {pages[name]} | {hit / max(1, total):.2%} "
              f"({hit:,} of {total:,}) | {1000 * seconds[name] / pages[name]:.0f} | "
              f"{broken} of {with_digits:,} |")
    hit = sum(f[0] for f in found.values())
    total = sum(f[1] for f in found.values())
    print(f"\nall: {hit / total:.2%} of {total:,} numbers on {sum(pages.values()):,} pages")
    short = sorted(w for w in worst if w[0] < 1)
    print(f"pages missing a number: {len(short)}" + "".join(
        f"{', ' if i else ': '}{stem} p{page} {share:.0%}"
        for i, (share, stem, page) in enumerate(short[:8])))
    for name, stems in sorted(files.items()):
        print(f"  {name}: {', '.join(stems)}")


if __name__ == "__main__":
    main()
