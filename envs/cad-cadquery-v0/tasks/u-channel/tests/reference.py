import cadquery as cq

section = [(-20, 0), (20, 0), (20, 25), (17, 25), (17, 3), (-17, 3), (-17, 25), (-20, 25)]
channel = cq.Workplane("YZ").polyline(section).close().extrude(100)
holes = cq.Workplane("XY").pushPoints([(25, 0), (75, 0)]).circle(2.5).extrude(3)
result = channel.cut(holes)
