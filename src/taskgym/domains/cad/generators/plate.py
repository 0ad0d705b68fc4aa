"""Family: a rectangular plate with a grid or a circle of through holes, corners rounded."""

from __future__ import annotations

import math
import random

from taskgym.domains.cad.generators import Design


def design(rng: random.Random) -> Design:
    length = rng.randrange(60, 161, 5)
    width = rng.randrange(40, length + 1, 5)
    thick = rng.choice([3, 4, 5, 6, 8, 10])
    corner = rng.choice([0, 2, 3, 5])
    diameter = rng.choice([3.4, 4.5, 5.5, 6.6, 9.0])
    if rng.random() < 0.5:
        nx, ny = rng.choice([(2, 2), (3, 2), (4, 2), (3, 3)])
        px = round((length - 4 * diameter) / max(nx - 1, 1) * 0.8, 1)
        py = round((width - 4 * diameter) / max(ny - 1, 1) * 0.8, 1)
        while min(px, py) < diameter + 3:  # holes must not touch: shrink them
            diameter = round(diameter * 0.7, 1)
            px = round((length - 4 * diameter) / max(nx - 1, 1) * 0.8, 1)
            py = round((width - 4 * diameter) / max(ny - 1, 1) * 0.8, 1)
        pattern = (f"{nx * ny} through holes of diameter {diameter:g} mm on a {nx} x {ny} grid "
                   f"centred on the plate, pitch {px:g} mm along X and {py:g} mm along Y")
        points = f".rarray({px!r}, {py!r}, {nx}, {ny})"
    else:
        count = rng.choice([3, 4, 5, 6, 8])
        radius = round(min(length, width) / 2 - diameter - 3, 1)
        while 2 * radius * math.sin(math.pi / count) < diameter + 3:  # keep a gap between holes
            count -= 1
        pattern = (f"{count} through holes of diameter {diameter:g} mm equally spaced on a circle "
                   f"of diameter {2 * radius:g} mm centred on the plate, the first at +X")
        points = f".polarArray({radius!r}, 0, 360, {count})"
    rounding = (f" The four vertical corner edges are rounded with radius {corner} mm." if corner
                else " The corners are sharp.")
    fillet = f'.edges("|Z").fillet({corner})' if corner else ""
    instruction = (
        f"A flat plate {length} mm long (X), {width} mm wide (Y) and {thick} mm thick (Z). Its "
        f"bottom face lies on Z = 0 and it is centred on the origin in X and Y.{rounding} "
        f"It has {pattern}.")
    code = (f"result = (\n    cq.Workplane(\"XY\").box({length}, {width}, {thick}, "
            f"centered=(True, True, False)){fillet}\n"
            f"    .faces(\">Z\").workplane(){points}.hole({diameter!r})\n)")
    return Design(f"Plate {length} x {width} x {thick} mm", instruction, code,
                  tags=("plate", "holes"))
