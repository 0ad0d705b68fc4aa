import cadquery as cq

result = (
    cq.Workplane("XY").box(60, 30, 20, centered=(True, True, False))
    .faces(">Z").workplane().slot2D(30, 8).cutThruAll()
)
