extends "/.game/checklib.gd"

func _init():
	frames = 1
	inputs = []

func evaluate(root):
	var crate = node(root, "Props/Crate", "StaticBody")
	if crate:
		near("Crate global position", crate.global_transform.origin, Vector3( -4, 1, -2 ), 0.01)
		expect("Crate in group pickups", crate.is_in_group("pickups"))
		expect("Crate collision layer", crate.collision_layer == 2, crate.collision_layer)
	var shape = node(root, "Props/Crate/Shape", "CollisionShape")
	if shape:
		expect("a BoxShape", shape.shape is BoxShape)
		if shape.shape is BoxShape:
			near("extents", shape.shape.extents, Vector3( 0.79, 0.79, 0.79 ), 0.01)
	var lamp = node(root, "Props/Crate/Lamp", "Spatial")
	if lamp and crate:
		near("Lamp above the Crate", lamp.global_transform.origin - crate.global_transform.origin, Vector3(0, 1, 0), 0.01)
