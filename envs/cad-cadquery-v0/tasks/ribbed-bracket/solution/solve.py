import cadquery as cq

profile = [(0, 0), (80, 0), (80, 8), (8, 8), (8, 60), (0, 60)]
body = cq.Workplane("XZ").polyline(profile).close().extrude(30, both=True)
for y in (-22, 22):
    rib = (cq.Workplane("XZ").polyline([(8, 8), (50, 8), (8, 50)]).close()
           .extrude(3, both=True).translate((0, y, 0)))
    body = body.union(rib)
base_holes = (cq.Workplane("XY").pushPoints([(x, y) for x in (30, 65) for y in (-12, 12)])
              .circle(4.25).extrude(8))
upright_holes = cq.Workplane("YZ").pushPoints([(-12, 40), (12, 40)]).circle(4.25).extrude(8)
result = body.cut(base_holes).cut(upright_holes)
