extends "/.game/checklib.gd"

func _init():
	frames = 165
	inputs = []

func evaluate(root):
	var counter = node(root, "Counter", "Node")
	if counter:
		expect("count is 5 after 165 frames", counter.get("count") == 5, counter.get("count"))
