extends Spatial

export var speed = 5

onready var body = get_node("Mesh")

func _physics_process(delta):
	body.translation.x += speed * delta
