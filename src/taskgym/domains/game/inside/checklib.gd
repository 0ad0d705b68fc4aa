# The base of every hidden task check (tests/check.gd extends "/.game/checklib.gd").
# The harness loads the check before any project code runs, plays `scene` for `frames`
# physics frames with `inputs` ([frame, action, pressed]), calling step(root, frame) after each,
# and then calls evaluate(root). Checks read state (positions, overlaps the physics engine
# keeps) rather than trusting signals, which other nodes could emit. Only each expect()'s name
# and result leave the engine (the host shows names it finds in the check's source).
extends Reference

var scene = "res://main.tscn"
var frames = 1
var inputs = []
var results = []

func setup(_root):
	pass

func step(_root, _frame):
	pass

func evaluate(_root):
	pass

func expect(name, ok, detail = ""):
	results.append({"name": name, "passed": bool(ok), "detail": str(detail)})
	return ok

func node(root, path, type):
	var n = root.get_node_or_null(path)
	var found = "missing" if n == null else n.get_class()
	if expect("%s is a %s" % [path, type], n != null and n.is_class(type), found):
		return n
	return null

func near(name, value, wanted, tol):
	var ok = false
	if typeof(value) == TYPE_VECTOR3:
		ok = value.distance_to(wanted) <= tol
	elif typeof(value) in [TYPE_REAL, TYPE_INT]:
		ok = abs(value - wanted) <= tol
	elif typeof(value) == TYPE_COLOR:
		ok = abs(value.r - wanted.r) <= tol and abs(value.g - wanted.g) <= tol and abs(value.b - wanted.b) <= tol
	return expect(name, ok, "%s (wanted %s within %s)" % [str(value), str(wanted), str(tol)])

func lights(root):
	var out = []
	var stack = [root]
	while stack:
		var n = stack.pop_back()
		if n is Light and n.visible and n.light_energy > 0:
			out.append(n)
		stack += n.get_children()
	return out

func is_lit(root, point):
	# some light reaches `point`: in range (and cone), with no collider between (an engine raycast)
	var space = root.get_world().direct_space_state
	for light in lights(root):
		var from = light.global_transform.origin
		var forward = -light.global_transform.basis.z
		if light is DirectionalLight:
			from = point - forward * 1000.0
		elif light is OmniLight and from.distance_to(point) > light.omni_range:
			continue
		elif light is SpotLight:
			if from.distance_to(point) > light.spot_range:
				continue
			if rad2deg(forward.angle_to(point - from)) > light.spot_angle:
				continue
		if space.intersect_ray(from, point).empty():
			return true
	return false
