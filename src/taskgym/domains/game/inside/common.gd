# Shared by the agent's tools (tool.gd) and the grader (harness.gd): describing nodes as JSON.
extends Reference

static func vec(v):
	return [stepify(v.x, 0.0001), stepify(v.y, 0.0001), stepify(v.z, 0.0001)]

static func xform(node):
	return {"origin": vec(node.transform.origin), "rotation_deg": vec(node.rotation_degrees),
		"scale": vec(node.scale),
		"global_origin": vec(node.global_transform.origin if node.is_inside_tree() else node.transform.origin)}

static func shape_of(shape):
	if shape == null:
		return null
	var d = {"type": shape.get_class()}
	for p in ["extents", "radius", "height"]:
		if p in shape:
			var v = shape.get(p)
			d[p] = vec(v) if typeof(v) == TYPE_VECTOR3 else v
	return d

static func describe(node, root):
	var d = {"path": str(root.get_path_to(node)), "type": node.get_class()}
	if node is Spatial:
		d["transform"] = xform(node)
	var script = node.get_script()
	if script != null:
		d["script"] = script.resource_path
	if node != root and node.filename != "":
		d["instance"] = node.filename
	var groups = []
	for g in node.get_groups():
		if not str(g).begins_with("_"):
			groups.append(str(g))
	if groups:
		d["groups"] = groups
	if node is CollisionObject:
		d["collision_layer"] = node.collision_layer
		d["collision_mask"] = node.collision_mask
	if node is CollisionShape:
		d["shape"] = shape_of(node.shape)
	if node is MeshInstance and node.mesh != null:
		d["mesh"] = node.mesh.get_class()
		for p in ["size", "radius", "height"]:
			if p in node.mesh:
				var v = node.mesh.get(p)
				d["mesh_" + p] = vec(v) if typeof(v) == TYPE_VECTOR3 else v
	if node is Light:
		d["light"] = {"energy": node.light_energy, "color": node.light_color.to_html(false),
			"shadow": node.shadow_enabled}
		if node is OmniLight:
			d["light"]["range"] = node.omni_range
		if node is SpotLight:
			d["light"]["range"] = node.spot_range
			d["light"]["angle"] = node.spot_angle
	if node is RigidBody:
		d["mode"] = node.mode
		d["mass"] = node.mass
		d["linear_velocity"] = vec(node.linear_velocity)
	if node is Timer:
		d["timer"] = {"wait_time": node.wait_time, "autostart": node.autostart, "one_shot": node.one_shot}
	var connections = []
	for s in node.get_signal_list():
		for c in node.get_signal_connection_list(s["name"]):
			if c["target"] is Node and root.is_a_parent_of(c["target"]) or c["target"] == root:
				connections.append({"signal": s["name"], "to": str(root.get_path_to(c["target"])),
					"method": c["method"]})
	if connections:
		d["connections"] = connections
	return d

static func walk(node, root, out, limit = 500):
	if out.size() >= limit:
		return
	out.append(describe(node, root))
	for child in node.get_children():
		walk(child, root, out, limit)
