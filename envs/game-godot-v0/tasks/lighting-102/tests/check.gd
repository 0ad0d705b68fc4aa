extends "/.game/checklib.gd"

func _init():
	frames = 2
	inputs = []

func evaluate(root):
	expect("exactly one light", lights(root).size() == 1, lights(root).size())
	var key = node(root, "Key", "OmniLight")
	if key:
		near("energy", key.light_energy, 2.81, 0.01)
		near("colour", key.light_color, Color("#88ccff"), 0.02)
		expect("shadows", key.shadow_enabled == true)
		near("range", key.omni_range, 6, 0.01)
	expect("(-6, 1, 3) is lit", is_lit(root, Vector3( -6, 1, 3 )))
	expect("(4, 1, -1) is dark", not is_lit(root, Vector3( 4, 1, -1 )))
