import cadquery as cq

result = (cq.Workplane("XZ").polyline([(0, 0), (50, 0), (50, 10), (30, 30), (0, 30)]).close()
          .extrude(-40))
