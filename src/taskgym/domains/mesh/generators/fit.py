"""Fit a real part into a box, scale it to a volume, or place it on the build plate (resting
on Z = 0, centred, turned about Z); scored by IoU with the transformed part."""

from __future__ import annotations

import random

from taskgym.domains.mesh.generators import Design, real, real_mesh

PARTS = ("idler_riser.STL", "featuretype.STL", "angle_block.STL", "busted.STL", "quadknot.obj",
         "plate_holes.STL", "20mm-xyz-cube.stl")
OPS = ("fit", "volume", "place")


def fit(src: str, op: str, amount: float, fmt: str) -> Design:
    mesh = real_mesh(src)
    load = f"part = trimesh.load('{src}', force='mesh')\n"
    if op == "fit":
        box = [round(float(e) * amount * f, 1) for e, f in zip(mesh.extents, (1.0, 1.3, 0.8), strict=True)]
        told = (f"Scale it uniformly (no rotation) to the largest size that fits in a box of {box[0]:g} x "
                f"{box[1]:g} x {box[2]:g} mm (X x Y x Z), placed with its bounding box's minimum corner "
                "at the origin")
        code = (f"part.apply_scale(min(np.array({box}) / part.extents))\n"
                "part.apply_translation(-part.bounds[0])\n")
    elif op == "volume":
        volume = round(float(mesh.volume) * amount ** 3, 1)
        told = (f"Scale it uniformly about its centre of mass to a volume of {volume:g} mm^3, then move "
                "it so its centre of mass is at the origin")
        code = (f"part.apply_translation(-part.center_mass)\npart.apply_scale(({volume} / part.volume) "
                "** (1 / 3))\n")
    else:
        turn = int(amount)
        told = (f"Turn it {turn} degrees about the Z axis (counter-clockwise seen from above), then move it "
                "so it rests on Z = 0 with its bounding box centred on X = 0, Y = 0")
        code = (f"part.apply_transform(trimesh.transformations.rotation_matrix(np.radians({turn}), "
                "[0, 0, 1]))\n"
                "low, high = part.bounds\npart.apply_translation([-(low[0] + high[0]) / 2, "
                "-(low[1] + high[1]) / 2, -low[2]])\n")
    (x0, y0, z0), (x1, y1, z1) = mesh.bounds.round(4).tolist()
    return Design(
        f"{op.capitalize()} {src}",
        f"/app/{src} is a real part spanning X {x0:g}..{x1:g}, Y {y0:g}..{y1:g}, Z {z0:g}..{z1:g} "
        f"(read as mm). {told}. Save it as /app/placed.{fmt}.",
        load + code + f"part.export('placed.{fmt}')\n", f"placed.{fmt}", inputs={src: real(src)},
        real=True, tags=("fit", op))


def design(rng: random.Random) -> Design:
    op = rng.choice(OPS)
    amount = float(rng.choice((30, 45, 90, 135, 180))) if op == "place" else rng.uniform(1.5, 8.0)
    return fit(rng.choice(PARTS), op, amount, rng.choice(("stl", "ply", "obj", "off")))
