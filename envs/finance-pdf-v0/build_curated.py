"""Rebuild the curated finance-pdf-v0 tasks: ``python envs/finance-pdf-v0/build_curated.py``.

The documents are seeded, so a rebuild writes the same PDFs byte for byte. Only the generated
folders (``co<k>-...``) are replaced; the real-filing tasks (``sec-...``, build_sec.py) stay.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from taskgym.domains.finance.generators import build_curated

if __name__ == "__main__":
    root = Path(__file__).resolve().parent / "tasks"
    for folder in root.glob("co[0-9]*-*"):
        shutil.rmtree(folder)
    print(f"wrote {build_curated(root)} tasks to {root}")
