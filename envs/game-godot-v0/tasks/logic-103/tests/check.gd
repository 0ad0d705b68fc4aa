extends "/.game/checklib.gd"

func _init():
	frames = 59
	inputs = [[12, 'next', true], [24, 'next', true], [38, 'next', true], [49, 'next', true], [16, 'next', false], [28, 'next', false], [42, 'next', false], [53, 'next', false]]

func evaluate(root):
	var m = node(root, "Machine", "Node")
	if m:
		expect("state after 4 presses", m.get("state") == "walk", m.get("state"))
