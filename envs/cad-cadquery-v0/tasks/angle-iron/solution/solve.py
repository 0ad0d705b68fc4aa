import cadquery as cq

result = (
    cq.Workplane("XZ")
    .polyline([(0, 0), (50, 0), (50, 5), (5, 5), (5, 50), (0, 50)]).close()
    .extrude(-100)
)
