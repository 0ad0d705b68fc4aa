extends "/.game/checklib.gd"

func _init():
	frames = 240
	inputs = []

func evaluate(root):
	var crate = node(root, "Crate", "RigidBody")
	if crate:
		var at = crate.global_transform.origin
		near("Crate rests on top of the Platform", at.y, 3.26, 0.05)
		expect("Crate is over the Platform", abs(at.x - -2) < 1.5 and abs(at.z - 1) < 1.5, at)
		expect("Crate is still", crate.linear_velocity.length() < 0.05, crate.linear_velocity)
	var plat = node(root, "Platform", "StaticBody")
	if plat:
		near("Platform not moved", plat.global_transform.origin, Vector3( -2, 2.6, 1 ), 0.001)
