import cadquery as cq

result = (
    cq.Workplane("XY").box(60, 60, 5, centered=(True, True, False)).edges("|Z").fillet(5)
    .faces(">Z").workplane().hole(22)
    .faces(">Z").workplane().rect(31, 31, forConstruction=True).vertices().hole(3.4)
)
