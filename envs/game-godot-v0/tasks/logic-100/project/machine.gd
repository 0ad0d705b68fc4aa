extends Node

var state = "idle"
