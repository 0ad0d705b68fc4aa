import cadquery as cq

base = cq.Workplane("XY").box(90, 30, 12, centered=(True, True, False))
boss = (cq.Workplane("XZ").moveTo(-25, 0).lineTo(25, 0).lineTo(25, 30)
        .threePointArc((0, 55), (-25, 30)).close().extrude(15, both=True))
bore = cq.Workplane("XZ").center(0, 30).circle(15).extrude(20, both=True)
holes = cq.Workplane("XY").pushPoints([(-36, 0), (36, 0)]).circle(5.5).extrude(12)
result = base.union(boss).cut(bore).cut(holes)
