extends "/.game/checklib.gd"

func _init():
	frames = 82
	inputs = []

func evaluate(root):
	var counter = node(root, "Counter", "Node")
	if counter:
		expect("count is 5 after 82 frames", counter.get("count") == 5, counter.get("count"))
