import cadquery as cq

block = cq.Workplane("XY").box(40, 30, 40, centered=(True, True, False))
slot = cq.Workplane("XY").workplane(offset=10).rect(16, 40).extrude(30)
pin = cq.Workplane("YZ").workplane(offset=-25).center(0, 28).circle(5).extrude(50)
blind = cq.Workplane("XY").circle(4).extrude(8)
result = block.cut(slot).cut(pin).cut(blind)
