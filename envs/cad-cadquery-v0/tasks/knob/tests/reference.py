import cadquery as cq

knob = cq.Workplane("XY").circle(15).extrude(15).faces(">Z").edges().fillet(3)
hole = cq.Workplane("XY").circle(3).extrude(10)
result = knob.cut(hole)
