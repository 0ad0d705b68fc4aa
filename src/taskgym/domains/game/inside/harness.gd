# The grader's main loop, run by the engine in the grading sandbox (never the agent's):
#   godot3-server --no-window --fixed-fps 60 --path /app -s /.game/harness.gd
# It runs first (the grader refuses projects with autoloads or native code), takes the
# one-time token from a file that it deletes, loads the hidden check from another (deleted
# too), audits every project script, plays the scene and prints one line: "<token> <JSON>".
# The token lives only in this coroutine's locals; project code never sees it, so a line it
# prints cannot pass for the report.
extends SceneTree

const BANNED = ["_get", "_set", "_get_property_list", "_notification"]

func _initialize():
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
	print(token + " " + to_json(record))
	quit()

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
		return _emit(token, {"ok": false, "reason": "the grader's token or check is missing"})
	var audit = _audit()
	if audit != "":
		return _emit(token, {"ok": false, "reason": audit})
	var check = check_script.new()
	seed(0)
	if not ResourceLoader.exists(check.scene):
		return _emit(token, {"ok": false, "reason": "%s does not exist" % check.scene})
	var packed = ResourceLoader.load(check.scene, "PackedScene", true)
	var root = packed.instance() if packed != null else null
	if root == null:
		return _emit(token, {"ok": false, "reason": "%s does not load (the engine's error is in the log)" % check.scene})
	get_root().add_child(root)
	check.setup(root)
	for frame in range(check.frames):
		for event in check.inputs:
			if event[0] == frame:
				if event[2]:
					Input.action_press(event[1])
				else:
					Input.action_release(event[1])
		yield(self, "physics_frame")
	if check.get_script() != check_script:
		return _emit(token, {"ok": false, "reason": "the check was tampered with"})
	check.evaluate(root)
	_emit(token, {"ok": true, "checks": check.results, "frames": Engine.get_physics_frames()})
