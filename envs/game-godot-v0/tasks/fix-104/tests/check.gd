extends "/.game/checklib.gd"

func _init():
	frames = 60
	inputs = []

func evaluate(root):
	var mover = node(root, "Mover", "Spatial")
	if mover:
		near("Mover moved 2 m in 1 s", mover.translation.x, 2, 0.077)
