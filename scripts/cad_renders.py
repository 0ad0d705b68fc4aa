"""Render the oracle parts of a few cad-cadquery-v0 tasks for the docs (docs/envs/img/cad-*.png).

Uses the env's own renderer (``inside/render.py``) on the host; needs ``pip install 'taskgym[cad]'``.
    python3 scripts/cad_renders.py [task-id ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src" / "taskgym" / "domains" / "cad" / "inside"))
sys.path.insert(0, str(ROOT / "src" / "taskgym" / "tools" / "inside"))

import geometry  # noqa: E402
import render  # noqa: E402

TASKS = ("flanged-housing", "shaft-keyway", "ribbed-bracket", "spur-gear")
VIEWS = ("iso", "top")


def main(task_ids: list[str]) -> None:
    out = ROOT / "docs" / "envs" / "img"
    out.mkdir(parents=True, exist_ok=True)
    for task_id in task_ids or TASKS:
        solve = ROOT / "envs" / "cad-cadquery-v0" / "tasks" / task_id / "solution" / "solve.py"
        shape = geometry.shape_from_code(solve.read_text(), str(solve))
        for view in VIEWS:
            path = out / f"cad-{task_id}-{view}.png"
            path.write_bytes(render.render_png(shape, view, f"{task_id}: {view} view"))
            print(path.relative_to(ROOT))


if __name__ == "__main__":
    main(sys.argv[1:])
