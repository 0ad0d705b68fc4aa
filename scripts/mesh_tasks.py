"""Write the curated tasks of mesh-trimesh-v0 (envs/mesh-trimesh-v0/tasks/) from hand-picked
parameters of the task kinds' builders, the real broken meshes among them.

    python3 scripts/mesh_tasks.py [task-id ...]        (needs pip install 'taskgym[mesh]')
"""

from __future__ import annotations

import random
import shutil
import sys
from pathlib import Path

from taskgym.domains.mesh.generators import build, decimate, edit, fit, hollow, repair, scene, write_task

ROOT = Path(__file__).resolve().parent.parent / "envs" / "mesh-trimesh-v0" / "tasks"

CURATED = {
    "plate-four-holes": ("build", lambda: build.plate(
        100, 60, 8, [(10, 10, 6.6), (90, 10, 6.6), (10, 50, 6.6), (90, 50, 6.6)], "stl")),
    "plate-two-holes-obj": ("build", lambda: build.plate(80, 40, 5, [(20, 20, 8.0), (60, 20, 4.5)], "obj")),
    "block-with-boss": ("build", lambda: build.boss(50, 50, 10, 24, 12, 8, "ply")),
    "bearing-block-glb": ("build", lambda: build.boss(70, 40, 15, 30, 10, 16, "glb")),
    "l-bracket": ("build", lambda: build.bracket(80, 40, 60, 6, 6.6, "stl")),
    "l-bracket-off": ("build", lambda: build.bracket(50, 30, 40, 4, 4.5, "off")),
    "repair-soup": ("repair", lambda: repair.real_broken("soup.stl")),
    "repair-wallhole": ("repair", lambda: repair.real_broken("wallhole.obj")),
    "repair-not-convex": ("repair", lambda: repair.real_broken("not_convex.obj")),
    "repair-multibody": ("repair", lambda: repair.real_broken("multibody.stl")),
    "repair-busted-holes": ("repair", lambda: repair.damaged("busted.STL", ("holes", "flips"),
                                                             random.Random(1), "stl")),
    "repair-ball-everything": ("repair", lambda: repair.damaged(
        "ballA.off", ("holes", "flips", "duplicates", "degenerate"), random.Random(2), "off")),
    "repair-featuretype-inside-out": ("repair", lambda: repair.damaged(
        "featuretype.STL", ("inside-out", "duplicates"), random.Random(3), "ply")),
    "repair-plate-degenerate": ("repair", lambda: repair.damaged(
        "plate_holes.STL", ("degenerate", "holes"), random.Random(4), "obj")),
    "drill-7-8ths-cube": ("edit", lambda: edit.edit("7_8ths_cube.stl", "drill", 0.25, 0.25, 0.2, "stl")),
    "counterbore-block": ("edit", lambda: edit.edit("block", "counterbore", 0.5, 0.5, 0.3, "ply")),
    "slot-calibration-cube": ("edit", lambda: edit.edit("20mm-xyz-cube.stl", "slot", 0.5, 0.5, 0.2, "obj")),
    "peg-on-plate": ("edit", lambda: edit.edit("plate_holes.STL", "peg", 0.5, 0.5, 0.15, "glb")),
    "counterbore-plate": ("edit", lambda: edit.edit("plate_holes.STL", "counterbore", 0.5, 0.4, 0.12, "stl")),
    "hollow-box": ("hollow", lambda: hollow.hollow("box", 40, 2, 4, "stl")),
    "hollow-cylinder": ("hollow", lambda: hollow.hollow("cylinder", 30, 1.5, 3, "ply")),
    "hollow-ball": ("hollow", lambda: hollow.hollow("ball", 0, 1.0, 2.0, "stl")),
    "hollow-box-thick": ("hollow", lambda: hollow.hollow("box", 60, 3, 5, "obj")),
    "fit-idler-riser": ("fit", lambda: fit.fit("idler_riser.STL", "fit", 20.0, "stl")),
    "scale-featuretype-volume": ("fit", lambda: fit.fit("featuretype.STL", "volume", 4.0, "ply")),
    "place-angle-block": ("fit", lambda: fit.fit("angle_block.STL", "place", 90, "off")),
    "place-quadknot": ("fit", lambda: fit.fit("quadknot.obj", "place", 45, "stl")),
    "decimate-sphere": ("decimate", lambda: decimate.decimate("sphere", 40, 0.2, "stl")),
    "decimate-torus": ("decimate", lambda: decimate.decimate("torus", 60, 0.1, "ply")),
    "decimate-ball": ("decimate", lambda: decimate.decimate("ballA", 0, 0.25, "off")),
    "scene-two-blocks-post": ("scene", lambda: scene.scene([20, 16], 5, True, False)),
    "scene-row-with-ball": ("scene", lambda: scene.scene([14, 18, 12], 2, False, True)),
}


def main(only: list[str]) -> None:
    for task_id, (family, make) in CURATED.items():
        if only and task_id not in only:
            continue
        dest = ROOT / task_id
        if dest.exists():
            shutil.rmtree(dest)
        write_task(make(), dest, family)
        print(dest.relative_to(ROOT.parent.parent.parent))


if __name__ == "__main__":
    main(sys.argv[1:])
