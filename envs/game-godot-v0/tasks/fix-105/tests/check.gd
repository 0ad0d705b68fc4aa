extends "/.game/checklib.gd"

func _init():
	frames = 60
	inputs = []

func evaluate(root):
	var mover = node(root, "Mover/Mesh", "MeshInstance")
	if mover:
		near("Mesh moved 1 m in 1 s", mover.translation.x, 1, 0.043)
