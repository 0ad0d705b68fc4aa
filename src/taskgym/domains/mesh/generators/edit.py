"""Boolean edits at given places on a given part (drill a hole, a counterbore, cut a slot,
add a peg): the input is a real mesh or a generated block; scored by IoU with the edited part."""

from __future__ import annotations

import random

from taskgym.domains.mesh.generators import Design, export, real, real_mesh
from taskgym.domains.mesh.generators.build import disc

LOAD = "part = trimesh.load('{src}', force='mesh')\n"
CYL = ("def cylinder(x, y, z0, z1, d):\n"
       "    return trimesh.creation.cylinder(radius=d / 2, segment=[[x, y, z0], [x, y, z1]], "
       "sections=96)\n\n")
OPS = ("drill", "counterbore", "slot", "peg")
INPUTS = ("7_8ths_cube.stl", "20mm-xyz-cube.stl", "plate_holes.STL", "block")


def edit(src: str, op: str, fx: float, fy: float, size: float, fmt: str) -> Design:
    """``op`` at the point (fx, fy) of the part's top face (fractions of its X and Y extent)."""
    import trimesh

    if src == "block":
        mesh = trimesh.creation.box(bounds=[[0, 0, 0], [60, 40, 15]])
        data, is_real, name = export(mesh, "stl"), False, "block.stl"
    else:
        data, is_real, name, mesh = real(src), True, src, real_mesh(src)
    (x0, y0, z0), (x1, y1, z1) = mesh.bounds.round(4).tolist()
    x, y = round(x0 + fx * (x1 - x0), 3), round(y0 + fy * (y1 - y0), 3)
    d = round(size * min(x1 - x0, y1 - y0), 2)
    where = f"at (X {x:g}, Y {y:g})"
    if op == "drill":
        what, code = f"Drill a round hole of diameter {d:g} mm through the part along Z {where}", \
            f"part = trimesh.boolean.difference([part, cylinder({x}, {y}, {z0 - 1}, {z1 + 1}, {d})], " \
            "engine='manifold')\n"
        feature = disc(d) * (z1 - z0)
    elif op == "counterbore":
        depth = round((z1 - z0) / 3, 3)
        what = (f"Make a counterbored hole {where}: a {d / 2:g} mm hole through the part along Z, "
                f"and a {d:g} mm counterbore {depth:g} mm deep from the top face (Z = {z1:g})")
        code = (f"part = trimesh.boolean.difference([part, cylinder({x}, {y}, {z0 - 1}, {z1 + 1}, {d / 2}), "
                f"cylinder({x}, {y}, {z1 - depth}, {z1 + 1}, {d})], engine='manifold')\n")
        feature = min(disc(d / 2) * (z1 - z0 - depth), (disc(d) - disc(d / 2)) * depth)
    elif op == "slot":
        depth = round((z1 - z0) / 4, 3)
        what = (f"Cut a slot {d:g} mm wide (in Y), centred on Y = {y:g}, through the whole X extent and "
                f"{depth:g} mm deep from the top face (Z = {z1:g})")
        code = (f"cut = trimesh.creation.box(bounds=[[{x0 - 1}, {y - d / 2}, {z1 - depth}], [{x1 + 1}, "
                f"{y + d / 2}, {z1 + 1}]])\npart = trimesh.boolean.difference([part, cut], "
                "engine='manifold')\n")
        feature = d * depth * (x1 - x0)
    else:
        height = round(z1 - z0, 3)
        what = (f"Add a round peg of diameter {d:g} mm standing on the top face {where}, from Z = {z1:g} "
                f"up to Z = {z1 + height:g} (one body with the part)")
        code = (f"part = trimesh.boolean.union([part, cylinder({x}, {y}, {z1 - 0.5}, {z1 + height}, {d})], "
                "engine='manifold')\n")
        feature = disc(d) * height
    return Design(
        f"{op.capitalize()} {name}",
        f"/app/{name} spans X {x0:g}..{x1:g}, Y {y0:g}..{y1:g}, Z {z0:g}..{z1:g} mm. {what}. Keep "
        f"everything else as it is and save the result as /app/edited.{fmt} (one watertight body).",
        CYL + LOAD.format(src=name) + code + f"part.export('edited.{fmt}')\n", f"edited.{fmt}",
        inputs={name: data}, real=is_real, tags=("edit", op),
        settings={"min_feature_mm3": round(feature, 4)})


def design(rng: random.Random) -> Design:
    op = rng.choice(OPS)
    size = rng.uniform(0.15, 0.3) if op != "slot" else rng.uniform(0.1, 0.25)
    return edit(rng.choice(INPUTS), op, rng.uniform(0.35, 0.65), rng.uniform(0.35, 0.65), size,
                rng.choice(("stl", "ply", "obj", "glb")))
