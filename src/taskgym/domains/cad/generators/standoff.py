"""Family: a hexagonal or round standoff with a through hole and chamfered ends."""

from __future__ import annotations

import random

from taskgym.domains.cad.generators import Design


def design(rng: random.Random) -> Design:
    height = rng.randrange(8, 41, 2)
    hexagonal = rng.random() < 0.6
    size = rng.choice([6, 8, 10, 12, 14])
    hole = round(size * rng.uniform(0.35, 0.55), 1)
    chamfer = rng.choice([0.3, 0.5, 0.8])
    if hexagonal:
        shape = (f"a hexagonal prism {size} mm across flats (two of its flat faces are parallel "
                 f"to the XZ plane)")
        body = f"cq.Workplane(\"XY\").polygon(6, {size / 0.8660254037844386!r}).extrude({height})"
    else:
        shape = f"a cylinder of diameter {size} mm"
        body = f"cq.Workplane(\"XY\").circle({size / 2!r}).extrude({height})"
    instruction = (
        f"A standoff: {shape}, {height} mm long along Z, with a coaxial through hole of diameter "
        f"{hole:g} mm. The outer edges of both end faces carry a {chamfer:g} mm x 45 degree "
        f"chamfer (the hole edges are not chamfered). Placement is free: only the shape and "
        f"its orientation (axis along Z) matter, not where it sits.")
    code = (f"body = {body}\n"
            f"body = body.faces(\">Z or <Z\").edges().chamfer({chamfer!r})\n"
            f"result = body.faces(\">Z\").workplane().hole({hole!r})")
    return Design(f"Standoff {size} x {height} mm", instruction, code, placement="free",
                  tags=("standoff", "chamfer"))
