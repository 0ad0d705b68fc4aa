import cadquery as cq

cube = cq.Workplane("XY").box(40, 40, 40)
drill = cq.Workplane("XY").cylinder(50, 6)
result = (cube.cut(drill)
          .cut(cq.Workplane("YZ").cylinder(50, 6))
          .cut(cq.Workplane("XZ").cylinder(50, 6)))
