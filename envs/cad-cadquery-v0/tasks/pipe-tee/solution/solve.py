import cadquery as cq

run = cq.Workplane("YZ").workplane(offset=-40).circle(15).extrude(80)
branch = cq.Workplane("XY").circle(15).extrude(40)
run_bore = cq.Workplane("YZ").workplane(offset=-40).circle(12).extrude(80)
branch_bore = cq.Workplane("XY").circle(12).extrude(40)
result = run.union(branch).cut(run_bore).cut(branch_bore)
