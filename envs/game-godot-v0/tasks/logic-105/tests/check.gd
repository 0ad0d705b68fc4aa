extends "/.game/checklib.gd"

func _init():
	frames = 120
	inputs = []

func setup(root):
	var door = root.get_node_or_null("Door")
	expect("Door starts closed", door != null and door.translation.y < 1.01)

func evaluate(root):
	var door = node(root, "Door", "Spatial")
	if door:
		near("Door opened", door.translation.y, 5, 0.01)
	var trig = node(root, "Trigger", "Area")
	if trig:
		expect("Trigger signal connected", trig.get_signal_connection_list("body_entered").size() > 0)
