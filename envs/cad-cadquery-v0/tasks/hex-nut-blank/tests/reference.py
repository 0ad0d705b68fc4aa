import cadquery as cq

across_corners = 17 / 0.8660254037844386
nut = cq.Workplane("XY").polygon(6, across_corners).extrude(8)
nut = nut.faces(">Z or <Z").edges().chamfer(0.8)
result = nut.faces(">Z").workplane().hole(10.2)
