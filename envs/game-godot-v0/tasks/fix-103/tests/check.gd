extends "/.game/checklib.gd"

func _init():
	frames = 135
	inputs = []

func evaluate(root):
	var counter = node(root, "Counter", "Node")
	if counter:
		expect("count is 4 after 135 frames", counter.get("count") == 4, counter.get("count"))
