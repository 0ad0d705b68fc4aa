"""Rebuild the curated finance-pdf-v0 tasks: ``python envs/finance-pdf-v0/build_curated.py``.

The documents are seeded, so a rebuild writes the same PDFs byte for byte.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from taskgym.domains.finance.tasks import build_curated

if __name__ == "__main__":
    root = Path(__file__).resolve().parent / "tasks"
    shutil.rmtree(root, ignore_errors=True)
    print(f"wrote {build_curated(root)} tasks to {root}")
