import cadquery as cq

profile = [(6, 0), (30, 0), (30, 2), (22, 5), (22, 11), (30, 14), (30, 16), (6, 16)]
result = cq.Workplane("XZ").polyline(profile).close().revolve(360, (0, 0, 0), (0, 1, 0))
