import cadquery as cq

bushing = (cq.Workplane("XY").circle(15).extrude(3)
           .faces(">Z").workplane().circle(10).extrude(17)
           .faces(">Z").edges().chamfer(1))
result = bushing.faces(">Z").workplane().hole(12)
