extends Node

var state = "idle"
var was_pressed = false


func _physics_process(_delta):
	var now = Input.is_action_pressed("next")
	if now and not was_pressed:
		state = {"idle": "walk", "walk": "run", "run": "idle"}[state]
	was_pressed = now
