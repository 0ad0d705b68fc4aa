extends Spatial

export var speed = 2


func _physics_process(delta):
	translation.x += speed * delta
