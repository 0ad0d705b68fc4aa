"""Family: an L-shaped angle bracket with holes in both legs and an optional gusset."""

from __future__ import annotations

import random

from taskgym.domains.cad.generators import Design


def design(rng: random.Random) -> Design:
    width = rng.randrange(30, 81, 5)
    base = rng.randrange(40, 91, 5)
    height = rng.randrange(40, 91, 5)
    thick = rng.choice([4, 5, 6, 8])
    hole = rng.choice([4.5, 5.5, 6.6])
    rib = rng.random() < 0.5
    base_hole_x = round((base + thick) / 2 + rng.uniform(0, 0.15) * base, 1)
    up_hole_z = round((height + thick) / 2 + rng.uniform(0, 0.15) * height, 1)
    spacing = round(width / 2, 1)
    instruction = (
        f"An L-shaped angle bracket of constant thickness {thick} mm and width {width} mm "
        f"(along Y, centred on Y = 0). The horizontal leg spans X = 0 to {base} mm and "
        f"Z = 0 to {thick} mm. The vertical leg spans X = 0 to {thick} mm and Z = 0 to "
        f"{height} mm. The horizontal leg has two vertical through holes of diameter {hole:g} mm "
        f"at X = {base_hole_x:g} mm, Y = +/-{spacing / 2:g} mm. The vertical leg has two "
        f"horizontal through holes (along X) of diameter {hole:g} mm at Z = {up_hole_z:g} mm, "
        f"Y = +/-{spacing / 2:g} mm.")
    code = (
        f"profile = [(0, 0), ({base}, 0), ({base}, {thick}), ({thick}, {thick}), ({thick}, {height}), "
        f"(0, {height})]\n"
        f"body = cq.Workplane(\"XZ\").polyline(profile).close().extrude({width / 2!r}, both=True)\n")
    if rib:
        leg = round(min(base, height) * 0.6)
        rib_t = thick
        instruction += (
            f" A triangular rib {rib_t} mm thick, centred on Y = 0, fills the inside corner: in "
            f"the XZ plane it is the triangle ({thick}, {thick}), ({leg}, {thick}), "
            f"({thick}, {leg}) (X, Z in mm).")
        code += (f"rib = cq.Workplane(\"XZ\").polyline([({thick}, {thick}), ({leg}, {thick}), "
                 f"({thick}, {leg})]).close().extrude({rib_t / 2!r}, both=True)\n"
                 "body = body.union(rib)\n")
    code += (
        f"base_holes = cq.Workplane(\"XY\").pushPoints([({base_hole_x!r}, {spacing / 2!r}), "
        f"({base_hole_x!r}, {-spacing / 2!r})]).circle({hole / 2!r}).extrude({thick})\n"
        f"leg_holes = cq.Workplane(\"YZ\").pushPoints([({spacing / 2!r}, {up_hole_z!r}), "
        f"({-spacing / 2!r}, {up_hole_z!r})]).circle({hole / 2!r}).extrude({thick})\n"
        "result = body.cut(base_holes).cut(leg_holes)")
    return Design(f"Angle bracket {base} x {height} mm", instruction, code,
                  difficulty="medium" if rib else "easy", tags=("bracket", "holes"))
