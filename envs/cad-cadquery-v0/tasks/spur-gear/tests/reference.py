import cadquery as cq

tooth = [(17, -2), (22, -1), (22, 1), (17, 2)]
gear = cq.Workplane("XY").circle(18).extrude(8)
for i in range(20):
    gear = gear.union(cq.Workplane("XY").polyline(tooth).close().extrude(8)
                      .rotate((0, 0, 0), (0, 0, 1), 18 * i))
result = gear.faces(">Z").workplane().hole(10)
