import cadquery as cq

result = (
    cq.Workplane("XY").circle(60).circle(20).extrude(10)
    .faces(">Z").workplane().polarArray(45, 0, 360, 6).hole(9)
)
