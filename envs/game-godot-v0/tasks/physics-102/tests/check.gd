extends "/.game/checklib.gd"

func _init():
	frames = 240
	inputs = []

func evaluate(root):
	var ball = node(root, "Ball", "RigidBody")
	if ball:
		near("Ball rests on the floor", ball.global_transform.origin, Vector3( 5, 0.83, -1 ), 0.05)
		expect("Ball is still", ball.linear_velocity.length() < 0.05, ball.linear_velocity)
