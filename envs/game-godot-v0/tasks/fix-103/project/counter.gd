extends Node

var count = 0


func on_tick():
	count += 1
