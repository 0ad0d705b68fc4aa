import cadquery as cq

shaft = cq.Workplane("YZ").circle(12.5).extrude(100).faces(">X or <X").edges().chamfer(1.5)
key = cq.Workplane("XY").box(40, 8, 10, centered=(False, True, False)).translate((10, 0, 8.5))
result = shaft.cut(key)
