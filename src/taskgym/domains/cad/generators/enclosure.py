"""Family: an open-top box enclosure with rounded vertical edges and floor mounting holes."""

from __future__ import annotations

import random

from taskgym.domains.cad.generators import Design


def design(rng: random.Random) -> Design:
    length = rng.randrange(50, 121, 5)
    width = rng.randrange(40, length + 1, 5)
    height = rng.randrange(20, 61, 5)
    wall = rng.choice([1.5, 2.0, 2.5, 3.0])
    radius = rng.choice([r for r in (3, 4, 5, 6) if r >= wall + 1])
    hole = rng.choice([3.2, 3.4, 4.5])
    inset = round(radius + wall + hole, 1)
    instruction = (
        f"An open-top box (enclosure). Outside it measures {length} mm (X) x {width} mm (Y) x "
        f"{height} mm (Z); its bottom face lies on Z = 0 and it is centred on the origin in X "
        f"and Y. The four vertical outside edges are rounded with radius {radius} mm. The top "
        f"is open; the walls and the floor are all {wall:g} mm thick (the inside corners "
        f"follow the outside rounding, with radius {radius} - {wall:g} mm). The floor has four "
        f"through holes of diameter {hole:g} mm at X = +/-{length / 2 - inset:g} mm, "
        f"Y = +/-{width / 2 - inset:g} mm.")
    code = (
        f"box = cq.Workplane(\"XY\").box({length}, {width}, {height}, centered=(True, True, False))"
        f".edges(\"|Z\").fillet({radius})\n"
        f"shell = box.faces(\">Z\").shell({-wall!r})\n"
        f"holes = cq.Workplane(\"XY\").rect({length - 2 * inset!r}, {width - 2 * inset!r}, "
        f"forConstruction=True).vertices().circle({hole / 2!r}).extrude({wall!r})\n"
        "result = shell.cut(holes)")
    return Design(f"Enclosure {length} x {width} x {height} mm", instruction, code,
                  difficulty="medium", tags=("enclosure", "shell", "holes"))
