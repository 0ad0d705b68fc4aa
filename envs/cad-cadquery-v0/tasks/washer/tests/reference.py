import cadquery as cq

result = cq.Workplane("XY").circle(12).circle(5.25).extrude(2.5)
