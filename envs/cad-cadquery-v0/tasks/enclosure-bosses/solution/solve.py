import cadquery as cq

box = cq.Workplane("XY").box(100, 70, 40, centered=(True, True, False))
shell = box.faces(">Z").shell(-2.5)
spots = [(x, y) for x in (-40, 40) for y in (-25, 25)]
bosses = cq.Workplane("XY").workplane(offset=2.5).pushPoints(spots).circle(4).extrude(15)
holes = cq.Workplane("XY").workplane(offset=5.5).pushPoints(spots).circle(1.5).extrude(12)
result = shell.union(bosses).cut(holes)
