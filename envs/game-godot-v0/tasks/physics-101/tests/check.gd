extends "/.game/checklib.gd"

func _init():
	frames = 180
	inputs = []

var entered = 0


func setup(root):
	var ball = root.get_node_or_null("Ball")
	expect("Ball starts at (2, 0.96, -2)", ball != null and ball.global_transform.origin.distance_to(Vector3( 2, 0.96, -2 )) < 0.01)


func step(root, _frame):  # the overlap the physics engine keeps, not a signal
	var goal = root.get_node_or_null("Goal")
	var ball = root.get_node_or_null("Ball")
	if goal is Area and ball is PhysicsBody and goal.overlaps_body(ball):
		entered += 1


func evaluate(root):
	var ball = node(root, "Ball", "RigidBody")
	if ball:
		expect("the Ball has no script", ball.get_script() == null)
		expect("the Ball travelled towards the Goal", -1 * (ball.global_transform.origin.x - 2) > 7.5)
	var goal = node(root, "Goal", "Area")
	if goal:
		near("Goal not moved", goal.global_transform.origin, Vector3( -7, 1, -2 ), 0.001)
	expect("the Ball entered the Goal", entered > 0, entered)
