extends "/.game/checklib.gd"

func _init():
	frames = 2
	inputs = []

func evaluate(root):
	expect("exactly one light", lights(root).size() == 1, lights(root).size())
	var key = node(root, "Key", "OmniLight")
	if key:
		near("energy", key.light_energy, 0.92, 0.01)
		near("colour", key.light_color, Color("#aaffaa"), 0.02)
		expect("shadows", key.shadow_enabled == false)
		near("range", key.omni_range, 7, 0.01)
	expect("(3, 1, -3) is lit", is_lit(root, Vector3( 3, 1, -3 )))
	expect("(-4, 1, -2) is dark", not is_lit(root, Vector3( -4, 1, -2 )))
