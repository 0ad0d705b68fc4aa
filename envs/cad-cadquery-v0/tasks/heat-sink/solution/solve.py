import cadquery as cq

base = cq.Workplane("XY").box(60, 40, 5, centered=(True, True, False))
fins = (cq.Workplane("XY").workplane(offset=5)
        .pushPoints([(-26.25 + 7.5 * i, 0) for i in range(8)]).rect(1.5, 40).extrude(25))
result = base.union(fins)
