import cadquery as cq

result = (
    cq.Workplane("XY").circle(10).extrude(40)
    .faces(">Z").workplane().circle(7.5).extrude(30)
    .faces(">Z").workplane().circle(5).extrude(20)
    .faces(">Z or <Z").edges().chamfer(1)
)
