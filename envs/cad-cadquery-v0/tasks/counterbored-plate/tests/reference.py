import cadquery as cq

plate = cq.Workplane("XY").box(80, 50, 12, centered=(True, True, False))
plate = plate.faces(">Z").workplane().pushPoints([(-28, 0), (28, 0)]).cboreHole(6.6, 11, 6.5)
result = plate.faces(">Z").workplane().pushPoints([(0, -15), (0, 15)]).cskHole(4.5, 9, 90)
