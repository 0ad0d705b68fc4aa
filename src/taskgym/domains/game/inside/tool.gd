# The agent's scene tools, run by the engine in the agent's sandbox:
#   godot3-server --no-window --path /app -s /.game/tool.gd
# Request: JSON file at $TASKGYM_GAME_REQUEST; reply: JSON file at $TASKGYM_GAME_REPLY.
#   {"op": "tree", "scene": "res://main.tscn"}
#   {"op": "edit", "scene": ..., "edits": [{"action": "add"|"remove"|"reparent"|"set"|"connect"|
#       "instance"|"group", ...}]}  (all or nothing: the file is saved only if every edit applied)
#   {"op": "run", "scene": ..., "frames": N, "inputs": [[frame, action, pressed]], "nodes": [paths]}
extends SceneTree

const Common = preload("common.gd")
var _root = null

func _initialize():
	var reply
	var request = parse_json(_read(OS.get_environment("TASKGYM_GAME_REQUEST")))
	if typeof(request) != TYPE_DICTIONARY:
		reply = {"ok": false, "error": "the request is not a JSON object"}
	else:
		reply = _dispatch(request)
	if reply != null:
		_finish(reply)
	if _root != null and reply != null:
		_root.free()

func _read(path):
	var f = File.new()
	if f.open(path, File.READ) != OK:
		return ""
	var text = f.get_as_text()
	f.close()
	return text

func _finish(reply):
	var f = File.new()
	f.open(OS.get_environment("TASKGYM_GAME_REPLY"), File.WRITE)
	f.store_string(to_json(reply))
	f.close()
	quit()

func _load(path):
	if typeof(path) != TYPE_STRING or not path.begins_with("res://") or not path.ends_with(".tscn"):
		return "scene must be a res://....tscn path, not %s" % [str(path)]
	if not ResourceLoader.exists(path):
		return "%s does not exist" % path
	var packed = ResourceLoader.load(path, "PackedScene", true)
	if packed == null:
		return "%s does not load (see the engine log)" % path
	var root = packed.instance(PackedScene.GEN_EDIT_STATE_INSTANCE)
	if root == null:
		return "%s does not instance (see the engine log)" % path
	return root

func _dispatch(request):
	var op = request.get("op")
	if op == "check":
		var path = str(request.get("script"))
		var script = load(path) if ResourceLoader.exists(path) else null
		if script == null or not script.can_instance():
			return {"ok": false, "error": "%s does not compile (see the engine log)" % path}
		return {"ok": true}
	var root = _load(request.get("scene"))
	if typeof(root) == TYPE_STRING:
		return {"ok": false, "error": root}
	_root = root
	if op == "tree":
		var nodes = []
		Common.walk(root, root, nodes)
		return {"ok": true, "nodes": nodes}
	if op == "edit":
		for edit in request.get("edits", []):
			var error = _edit(root, edit) if typeof(edit) == TYPE_DICTIONARY else "an edit must be an object"
			if error != "":
				return {"ok": false, "error": "edit %s: %s; the file was not changed" % [to_json(edit), error]}
		var packed = PackedScene.new()
		var err = packed.pack(root)
		if err != OK:
			return {"ok": false, "error": "the scene could not be packed (error %d); the file was not changed" % err}
		err = ResourceSaver.save(request["scene"], packed)
		if err != OK:
			return {"ok": false, "error": "saving failed (error %d)" % err}
		var nodes = []
		Common.walk(root, root, nodes)
		return {"ok": true, "nodes": nodes}
	if op == "run":
		_run(root, request)
		return null
	return {"ok": false, "error": "unknown op %s" % str(op)}

func _bad_name(name):
	for c in [".", ":", "@", "/", "\"", "%"]:
		if c in name:
			return true
	return false

func _node(root, path):
	if typeof(path) != TYPE_STRING:
		return null
	if path == "." or path == "":
		return root
	return root.get_node_or_null(path)

func _own(node, root):
	if node != root:
		node.owner = root
	if node.filename != "" and node != root:
		return  # an instanced sub-scene: its own nodes stay its own
	for child in node.get_children():
		_own(child, root)

func _value(current, value):
	if typeof(value) == TYPE_DICTIONARY and value.has("type"):
		if not ClassDB.class_exists(value["type"]) or not ClassDB.is_parent_class(value["type"], "Resource") \
				or not ClassDB.can_instance(value["type"]):
			return [null, "%s is not a resource type" % str(value["type"])]
		var res = ClassDB.instance(value["type"])
		for key in value:
			if key != "type":
				if not key in res:
					return [null, "%s has no property %s" % [value["type"], key]]
				var converted = _value(res.get(key), value[key])
				if converted[1] != "":
					return converted
				res.set(key, converted[0])
		return [res, ""]
	match typeof(current):
		TYPE_VECTOR3:
			if typeof(value) == TYPE_ARRAY and value.size() == 3:
				return [Vector3(value[0], value[1], value[2]), ""]
			return [null, "expected [x, y, z]"]
		TYPE_VECTOR2:
			if typeof(value) == TYPE_ARRAY and value.size() == 2:
				return [Vector2(value[0], value[1]), ""]
			return [null, "expected [x, y]"]
		TYPE_COLOR:
			if typeof(value) == TYPE_STRING:
				return [Color(value), ""]
			if typeof(value) == TYPE_ARRAY and value.size() in [3, 4]:
				return [Color(value[0], value[1], value[2], value[3] if value.size() == 4 else 1.0), ""]
			return [null, "expected [r, g, b] or \"#rrggbb\""]
		TYPE_BOOL:
			return [bool(value), ""] if typeof(value) in [TYPE_BOOL, TYPE_REAL, TYPE_INT] else [null, "expected true/false"]
		TYPE_INT:
			return [int(value), ""] if typeof(value) in [TYPE_REAL, TYPE_INT] else [null, "expected an integer"]
		TYPE_REAL:
			return [float(value), ""] if typeof(value) in [TYPE_REAL, TYPE_INT] else [null, "expected a number"]
		TYPE_STRING:
			return [str(value), ""]
		TYPE_NODE_PATH:
			return [NodePath(str(value)), ""]
	return [null, "cannot set a property of type %d from JSON; use a resource {\"type\": ...} or edit the file" % typeof(current)]

func _edit(root, e):
	var action = e.get("action")
	if action == "add" or action == "instance":
		var parent = _node(root, e.get("parent", "."))
		if parent == null:
			return "no parent node %s" % str(e.get("parent"))
		var node
		if action == "add":
			var type = str(e.get("type"))
			if not ClassDB.class_exists(type) or not ClassDB.is_parent_class(type, "Node") or not ClassDB.can_instance(type):
				return "%s is not a node type" % type
			node = ClassDB.instance(type)
		else:
			var sub = _load(e.get("scene"))
			if typeof(sub) == TYPE_STRING:
				return sub
			sub.free()
			node = load(e["scene"]).instance(PackedScene.GEN_EDIT_STATE_INSTANCE)
		var name = str(e.get("name", ""))
		if name == "" or name.length() > 100 or _bad_name(name):
			return "give a valid node name (no . : @ / \" %)"
		if parent.has_node(name):
			return "%s already has a child %s" % [str(root.get_path_to(parent)), name]
		node.name = name
		parent.add_child(node)
		_own(node, root)
		for key in e.get("properties", {}):
			var error = _set_prop(node, key, e["properties"][key])
			if error != "":
				return error
		return ""
	var node = _node(root, e.get("node"))
	if node == null:
		return "no node %s" % str(e.get("node"))
	if action == "remove":
		if node == root:
			return "the root cannot be removed"
		node.get_parent().remove_child(node)
		node.free()
		return ""
	if action == "reparent":
		var parent = _node(root, e.get("parent"))
		if parent == null or node == root or parent == node or node.is_a_parent_of(parent):
			return "cannot move %s under %s" % [str(e.get("node")), str(e.get("parent"))]
		if parent.has_node(node.name):
			return "%s already has a child %s" % [str(e.get("parent")), node.name]
		var kept = node.transform if node is Spatial and e.get("keep_global", false) else null
		var old_parent = node.get_parent()
		old_parent.remove_child(node)
		parent.add_child(node)
		_own(node, root)
		if kept != null:  # both parents' transforms as saved, not in a tree
			node.transform = _to_root(parent, root).affine_inverse() * _to_root(old_parent, root) * kept
		return ""
	if action == "set":
		return _set_prop(node, e.get("property"), e.get("value"))
	if action == "group":
		node.add_to_group(str(e.get("group")), true)
		return ""
	if action == "connect":
		var target = _node(root, e.get("target"))
		var signal_name = str(e.get("signal"))
		var method = str(e.get("method"))
		if target == null:
			return "no target node %s" % str(e.get("target"))
		if not node.has_signal(signal_name):
			return "%s has no signal %s" % [node.get_class(), signal_name]
		if not target.has_method(method):
			return "%s has no method %s (attach a script that defines it first)" % [str(e.get("target")), method]
		if node.is_connected(signal_name, target, method):
			return "already connected"
		var err = node.connect(signal_name, target, method, [], CONNECT_PERSIST)
		return "" if err == OK else "connect failed (error %d)" % err
	return "unknown action %s (add, remove, reparent, set, connect, instance, group)" % str(action)

func _to_root(node, root):
	var t = Transform()
	while node != root and node != null:
		if node is Spatial:
			t = node.transform * t
		node = node.get_parent()
	return t

func _set_prop(node, property, value):
	if typeof(property) != TYPE_STRING or not property in node:
		return "%s has no property %s" % [node.get_class(), str(property)]
	if property == "script":
		if typeof(value) != TYPE_STRING or not value.begins_with("res://") or not ResourceLoader.exists(value):
			return "script must be an existing res://....gd path"
		var script = load(value)
		if not script is Script or not script.can_instance():
			return "%s does not compile (see the engine log)" % value
		node.set_script(script)
		return ""
	var converted = _value(node.get(property), value)
	if converted[1] != "":
		return "%s: %s" % [property, converted[1]]
	node.set(property, converted[0])
	return ""

func _run(root, request):
	seed(int(request.get("seed", 0)))
	get_root().add_child(root)
	var inputs = request.get("inputs", [])
	var frames = int(request.get("frames", 60))
	for frame in range(frames):
		for event in inputs:
			if typeof(event) == TYPE_ARRAY and event.size() == 3 and int(event[0]) == frame:
				if not InputMap.has_action(str(event[1])):
					InputMap.add_action(str(event[1]))
				if event[2]:
					Input.action_press(str(event[1]))
				else:
					Input.action_release(str(event[1]))
		yield(self, "physics_frame")
	var nodes = []
	var wanted = request.get("nodes", [])
	if wanted:
		for path in wanted:
			var node = _node(root, path)
			nodes.append(Common.describe(node, root) if node != null else {"path": path, "missing": true})
	else:
		Common.walk(root, root, nodes, 100)
	_finish({"ok": true, "frames": Engine.get_physics_frames(), "nodes": nodes})
