import cadquery as cq

result = (
    cq.Workplane("XY").box(100, 60, 8, centered=(True, True, False))
    .faces(">Z").workplane().rect(80, 40, forConstruction=True).vertices().hole(6.6)
)
