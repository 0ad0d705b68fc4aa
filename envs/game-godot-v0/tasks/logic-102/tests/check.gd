extends "/.game/checklib.gd"

func _init():
	frames = 21
	inputs = [[11, 'next', true], [15, 'next', false]]

func evaluate(root):
	var m = node(root, "Machine", "Node")
	if m:
		expect("state after 1 presses", m.get("state") == "walk", m.get("state"))
