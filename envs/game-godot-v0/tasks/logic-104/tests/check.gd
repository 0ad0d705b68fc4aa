extends "/.game/checklib.gd"

func _init():
	frames = 94
	inputs = [[14, 'next', true], [26, 'next', true], [37, 'next', true], [47, 'next', true], [62, 'next', true], [73, 'next', true], [84, 'next', true], [18, 'next', false], [30, 'next', false], [41, 'next', false], [51, 'next', false], [66, 'next', false], [77, 'next', false], [88, 'next', false]]

func evaluate(root):
	var m = node(root, "Machine", "Node")
	if m:
		expect("state after 7 presses", m.get("state") == "walk", m.get("state"))
