"""Render the inputs of a few mesh-trimesh-v0 tasks as the agent's `render` tool shows them,
for the docs (docs/envs/img/mesh-*.png). Needs ``pip install 'taskgym[mesh]'``.

    python3 scripts/mesh_renders.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src" / "taskgym" / "domains" / "mesh" / "inside"))
sys.path.insert(0, str(ROOT / "src" / "taskgym" / "tools" / "inside"))

import meshlib  # noqa: E402
import worker  # noqa: E402

SHOWN = (("repair-wallhole", "wallhole.obj", "right"), ("repair-busted-holes", "broken.stl", "iso"),
         ("drill-7-8ths-cube", "7_8ths_cube.stl", "iso"), ("decimate-torus", "dense.ply", "top"))


def main() -> None:
    out = ROOT / "docs" / "envs" / "img"
    out.mkdir(parents=True, exist_ok=True)
    for task_id, name, view in SHOWN:
        path = ROOT / "envs" / "mesh-trimesh-v0" / "tasks" / task_id / "environment" / "files" / name
        image = out / f"mesh-{task_id}-{view}.png"
        image.write_bytes(worker.render_png(meshlib.load(str(path)), view, f"{name}: {view} view"))
        print(image.relative_to(ROOT))


if __name__ == "__main__":
    main()
