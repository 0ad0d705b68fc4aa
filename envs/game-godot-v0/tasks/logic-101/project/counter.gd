extends Node

var count = 0
