# The grader's main loop, run by the engine in the grading sandbox (never the agent's):
#   godot3-server --no-window --fixed-fps 60 --path <graded project> -s /.game/harness.gd
# The graded project holds only allow-listed scenes and scripts and the grader's project.godot
# (no autoload: this runs first). It opens the report file and takes the one-time token from a
# file that it deletes, loads the hidden check from another (deleted too), audits every project
# script, plays the scene for the check's frames by the engine's own physics frame counter
# (failing if the tree was paused, time was scaled, the physics rate or gravity changed, or an
# Area overrides gravity) and writes one line to the report file: "<token> <JSON>". Only the
# checks' names and results and a cause code leave it; stdout is the engine's log.
extends SceneTree

const BANNED = ["_get", "_set", "_get_property_list", "_notification"]

var _report = File.new()

func _initialize():
	if _report.open(OS.get_environment("TASKGYM_GAME_REPORT"), File.WRITE) != OK:
		return quit()
	_grade(_take(OS.get_environment("TASKGYM_GAME_TOKEN")), _load_check(OS.get_environment("TASKGYM_GAME_CHECK")))

func _take(path):
	var f = File.new()
	var token = ""
	if f.open(path, File.READ) == OK:
		token = f.get_as_text().strip_edges()
		f.close()
	Directory.new().remove(path)
	return token

func _load_check(path):
	var script = load(path)
	Directory.new().remove(path)
	return script

func _emit(token, record):
	record["final"] = true
	_report.store_string(token + " " + to_json(record) + "\n")
	_report.close()
	quit()

func _fail(token, cause, detail = ""):
	if detail != "":
		printerr("grader: " + detail)  # for the log (humans), never the agent
	_emit(token, {"ok": false, "cause": cause})

func _world_pinned(top):
	# what the checks assume of time and physics; none of it is the project's to change
	if paused or Engine.time_scale != 1.0 or Engine.iterations_per_second != 60:
		return false
	if ProjectSettings.get_setting("physics/3d/default_gravity") != 9.8:
		return false
	if ProjectSettings.get_setting("physics/3d/default_gravity_vector") != Vector3(0, -1, 0):
		return false
	var stack = [top]  # the whole tree: a node added beside the scene counts too
	while stack:
		var n = stack.pop_back()
		if n is Area and n.space_override != Area.SPACE_OVERRIDE_DISABLED:
			return false
		if n.pause_mode == Node.PAUSE_MODE_PROCESS:
			return false
		stack += n.get_children()
	return true

func _scripts_of(top):
	var out = {}
	var stack = [top]
	while stack:
		var n = stack.pop_back()
		out[n.get_instance_id()] = n.get_script()
		stack += n.get_children()
	return out

func _scripts(dir_path, out):
	var dir = Directory.new()
	if dir.open(dir_path) != OK:
		return
	dir.list_dir_begin(true, true)
	var name = dir.get_next()
	while name != "":
		var path = dir_path.plus_file(name)
		if dir.current_is_dir():
			_scripts(path, out)
		elif name.ends_with(".gd"):
			out.append(path)
		name = dir.get_next()

func _audit():
	var paths = []
	_scripts("res://", paths)
	for path in paths:
		var script = load(path)
		if script == null or not script is GDScript:
			continue  # a script that does not compile fails where it is used
		var base = script.get_instance_base_type()
		var native = {}
		for p in ClassDB.class_get_property_list(base):
			native[p["name"]] = true
		for m in script.get_script_method_list():
			var name = m["name"]
			if name in BANNED:
				return "%s overrides %s, which graded projects may not" % [path, name]
			if not name.begins_with("_") and ClassDB.class_has_method(base, name):
				return "%s redefines %s.%s(), a method of the engine" % [path, base, name]
		for p in script.get_script_property_list():
			if native.has(p["name"]):
				return "%s redefines the engine property %s.%s" % [path, base, p["name"]]
	return ""

func _grade(token, check_script):
	if token == "" or check_script == null:
		return _fail(token, "harness", "the grader's token or check is missing")
	var audit = _audit()
	if audit != "":
		return _fail(token, "audit", audit)
	var check = check_script.new()
	seed(0)
	for event in check.inputs:
		if not InputMap.has_action(event[1]):
			InputMap.add_action(event[1])
	if not ResourceLoader.exists(check.scene):
		return _fail(token, "no-scene", "%s does not exist" % check.scene)
	var packed = ResourceLoader.load(check.scene, "PackedScene", true)
	var root = packed.instance() if packed != null else null
	if root == null:
		return _fail(token, "no-scene", "%s does not load" % check.scene)
	var scripts = _scripts_of(root)  # before any project code ran (_ready)
	get_root().add_child(root)
	check.setup(root)
	var start = Engine.get_physics_frames()
	var frame = 0
	while frame < check.frames:
		for event in check.inputs:
			if event[0] == frame:
				if event[2]:
					Input.action_press(event[1])
				else:
					Input.action_release(event[1])
		yield(self, "physics_frame")
		if not _world_pinned(get_root()):
			return _fail(token, "world", "the tree was paused, time scaled, or physics changed")
		frame = Engine.get_physics_frames() - start
		check.step(root, frame)
	if check.get_script() != check_script:
		return _fail(token, "harness", "the check was tampered with")
	for id in scripts:
		var n = instance_from_id(id)
		if n != null and n.get_script() != scripts[id]:
			return _fail(token, "world", "a node's script was changed while playing")
	check.evaluate(root)
	var results = []
	for r in check.results:
		results.append({"name": str(r["name"]), "passed": bool(r["passed"])})
		print("check: %s: %s (%s)" % [r["name"], "passed" if r["passed"] else "FAILED", r["detail"]])
	_emit(token, {"ok": true, "checks": results, "frames": Engine.get_physics_frames() - start})
