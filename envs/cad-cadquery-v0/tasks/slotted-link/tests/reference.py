import cadquery as cq

link = cq.Workplane("XY").slot2D(100, 20).extrude(6)
link = link.faces(">Z").workplane().pushPoints([(-40, 0), (40, 0)]).hole(8)
result = link.faces(">Z").workplane().slot2D(40, 8).cutThruAll()
