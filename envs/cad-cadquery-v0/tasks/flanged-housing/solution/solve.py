import cadquery as cq

flange = (cq.Workplane("XY").box(100, 100, 12, centered=(True, True, False))
          .edges("|Z").fillet(8))
housing = cq.Workplane("XY").workplane(offset=12).circle(30).extrude(38)
body = flange.union(housing)
body = body.edges(cq.selectors.BoxSelector((-31, -31, 11.9), (31, 31, 12.1))).fillet(3)
corners = [(x, y) for x in (-38, 38) for y in (-38, 38)]
holes = cq.Workplane("XY").pushPoints(corners).circle(4.5).extrude(12)
cbores = cq.Workplane("XY").workplane(offset=6).pushPoints(corners).circle(7.5).extrude(6)
bore = cq.Workplane("XY").circle(20).extrude(50)
result = body.cut(holes).cut(cbores).cut(bore)
