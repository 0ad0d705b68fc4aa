extends Spatial


func open(_body):
	translation.y = 5
