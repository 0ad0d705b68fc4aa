extends "/.game/checklib.gd"

func _init():
	frames = 68
	inputs = [[10, 'next', true], [26, 'next', true], [38, 'next', true], [50, 'next', true], [58, 'next', true], [14, 'next', false], [30, 'next', false], [42, 'next', false], [54, 'next', false], [62, 'next', false]]

func evaluate(root):
	var m = node(root, "Machine", "Node")
	if m:
		expect("state after 5 presses", m.get("state") == "run", m.get("state"))
