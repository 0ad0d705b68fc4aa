"""Family: a round flange with a hub, a through bore and bolt holes on a pitch circle."""

from __future__ import annotations

import random

from taskgym.domains.cad.generators import Design


def design(rng: random.Random) -> Design:
    outer = rng.randrange(60, 141, 10)
    thick = rng.choice([6, 8, 10, 12])
    hub = round(outer * rng.uniform(0.4, 0.5))
    hub_height = rng.choice([6, 8, 10, 15])
    bore = round(hub * rng.uniform(0.45, 0.65))
    bolts = rng.choice([4, 6, 8])
    bolt = rng.choice([5.5, 6.6, 9.0])
    pcd = round((outer + hub) / 2)
    chamfer = rng.choice([0, 0.5, 1.0])
    edge = (f" The outer top edge of the flange disc has a {chamfer:g} mm x 45 degree chamfer."
            if chamfer else "")
    instruction = (
        f"A round flange: a disc of diameter {outer} mm and thickness {thick} mm whose bottom "
        f"face lies on Z = 0, centred on the Z axis. On top of it a coaxial cylindrical hub of "
        f"diameter {hub} mm rises {hub_height} mm (so the part is {thick + hub_height} mm tall). "
        f"A through bore of diameter {bore} mm runs along the Z axis through disc and hub. "
        f"{bolts} through bolt holes of diameter {bolt:g} mm are equally spaced on a pitch "
        f"circle of diameter {pcd} mm, the first on the +X axis.{edge}")
    disc = f"cq.Workplane(\"XY\").circle({outer / 2!r}).extrude({thick})"
    if chamfer:
        disc += f".faces(\">Z\").edges().chamfer({chamfer!r})"
    code = (
        f"disc = {disc}\n"
        f"hub = cq.Workplane(\"XY\").workplane(offset={thick}).circle({hub / 2!r}).extrude({hub_height})\n"
        f"result = (\n    disc.union(hub)\n"
        f"    .faces(\"<Z\").workplane().hole({bore})\n"
        f"    .faces(\"<Z\").workplane().polarArray({pcd / 2!r}, 0, 360, {bolts}).hole({bolt!r})\n)")
    return Design(f"Flange {outer} mm with hub", instruction, code, difficulty="medium",
                  tags=("flange", "holes", "revolved"))
