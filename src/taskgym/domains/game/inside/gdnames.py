"""The names a graded project's GDScript may use: everything else is refused (an allow-list).

``ENGINE_MEMBERS`` was taken from the engine's own ``ClassDB`` (Godot 3.2: the methods,
properties, signals and constants that Node, Spatial, the physics bodies, Area,
CollisionShape, MeshInstance, the lights, Timer, Camera, RayCast and KinematicCollision
declare themselves, not what they inherit from Object), less what reaches past the scene or
changes the world's physics: the tree and viewport, calls and notifications by name, pause
and priority, networking, the world and RIDs, an Area's gravity override, shape owners.
Object's own methods (``call``, ``set``, ``get``, ``connect``, ``emit_signal``, ``set_script``,
``get_signal_connection_list``...) are in no list; ``connect`` and ``emit_signal`` are checked
by shape in :mod:`gdscript`.
"""

ENGINE_MEMBERS = frozenset("""
BAKE_ALL BAKE_DISABLED BAKE_INDIRECT DOPPLER_TRACKING_DISABLED DOPPLER_TRACKING_IDLE_STEP
DOPPLER_TRACKING_PHYSICS_STEP DUPLICATE_GROUPS DUPLICATE_SCRIPTS DUPLICATE_SIGNALS
DUPLICATE_USE_INSTANCING FLAG_DRAW_NEXT_FRAME_IF_VISIBLE FLAG_MAX FLAG_USE_BAKED_LIGHT KEEP_HEIGHT
KEEP_WIDTH LOD MODE_CHARACTER MODE_KINEMATIC MODE_RIGID MODE_STATIC NOTIFICATION_APP_PAUSED
NOTIFICATION_APP_RESUMED NOTIFICATION_CRASH NOTIFICATION_DRAG_BEGIN NOTIFICATION_DRAG_END
NOTIFICATION_ENTER_TREE NOTIFICATION_ENTER_WORLD NOTIFICATION_EXIT_TREE NOTIFICATION_EXIT_WORLD
NOTIFICATION_INSTANCED NOTIFICATION_INTERNAL_PHYSICS_PROCESS NOTIFICATION_INTERNAL_PROCESS
NOTIFICATION_MOVED_IN_PARENT NOTIFICATION_OS_IME_UPDATE NOTIFICATION_OS_MEMORY_WARNING
NOTIFICATION_PARENTED NOTIFICATION_PATH_CHANGED NOTIFICATION_PAUSED NOTIFICATION_PHYSICS_PROCESS
NOTIFICATION_POST_ENTER_TREE NOTIFICATION_PROCESS NOTIFICATION_READY NOTIFICATION_TRANSFORM_CHANGED
NOTIFICATION_TRANSLATION_CHANGED NOTIFICATION_UNPARENTED NOTIFICATION_UNPAUSED
NOTIFICATION_VISIBILITY_CHANGED NOTIFICATION_WM_ABOUT NOTIFICATION_WM_FOCUS_IN
NOTIFICATION_WM_FOCUS_OUT NOTIFICATION_WM_GO_BACK_REQUEST NOTIFICATION_WM_MOUSE_ENTER
NOTIFICATION_WM_MOUSE_EXIT NOTIFICATION_WM_QUIT_REQUEST NOTIFICATION_WM_UNFOCUS_REQUEST
PARAM_ATTENUATION PARAM_CONTACT_SHADOW_SIZE PARAM_ENERGY PARAM_INDIRECT_ENERGY PARAM_MAX PARAM_RANGE
PARAM_SHADOW_BIAS PARAM_SHADOW_BIAS_SPLIT_SCALE PARAM_SHADOW_MAX_DISTANCE PARAM_SHADOW_NORMAL_BIAS
PARAM_SHADOW_SPLIT_1_OFFSET PARAM_SHADOW_SPLIT_2_OFFSET PARAM_SHADOW_SPLIT_3_OFFSET PARAM_SPECULAR
PARAM_SPOT_ANGLE PARAM_SPOT_ATTENUATION PAUSE_MODE_INHERIT PAUSE_MODE_PROCESS PAUSE_MODE_STOP
PROJECTION_FRUSTUM PROJECTION_ORTHOGONAL PROJECTION_PERSPECTIVE SHADOW_CASTING_SETTING_DOUBLE_SIDED
SHADOW_CASTING_SETTING_OFF SHADOW_CASTING_SETTING_ON SHADOW_CASTING_SETTING_SHADOWS_ONLY SHADOW_CUBE
SHADOW_DEPTH_RANGE_OPTIMIZED SHADOW_DEPTH_RANGE_STABLE SHADOW_DETAIL_HORIZONTAL
SHADOW_DETAIL_VERTICAL SHADOW_DUAL_PARABOLOID SHADOW_ORTHOGONAL SHADOW_PARALLEL_2_SPLITS
SHADOW_PARALLEL_4_SPLITS SPACE_OVERRIDE_COMBINE SPACE_OVERRIDE_COMBINE_REPLACE
SPACE_OVERRIDE_DISABLED SPACE_OVERRIDE_REPLACE SPACE_OVERRIDE_REPLACE_COMBINE TIMER_PROCESS_IDLE
TIMER_PROCESS_PHYSICS _enter_tree _exit_tree _get_configuration_warning _get_layers _input
_input_event _integrate_forces _physics_process _process _ready _set_layers _unhandled_input
_unhandled_key_input add_central_force add_child add_child_below_node add_collision_exception_with
add_exception add_force add_to_group add_torque angular_damp angular_velocity apply_central_impulse
apply_impulse apply_torque_impulse area_entered area_exited area_shape_entered area_shape_exited
audio_bus_name audio_bus_override autostart axis_lock_angular_x axis_lock_angular_y
axis_lock_angular_z axis_lock_linear_x axis_lock_linear_y axis_lock_linear_z body_entered
body_exited body_shape_entered body_shape_exited bounce can_process can_sleep cast_shadow cast_to
clear_current clear_exceptions collide_with_areas collide_with_bodies collider collider_shape
collider_shape_index collider_velocity collision/safe_margin collision_layer collision_mask
constant_angular_velocity constant_linear_velocity contact_monitor contacts_reported continuous_cd
create_convex_collision create_debug_tangents create_trimesh_collision cull_mask current
custom_integrator directional_shadow_bias_split_scale directional_shadow_blend_splits
directional_shadow_depth_range directional_shadow_max_distance directional_shadow_mode
directional_shadow_normal_bias directional_shadow_split_1 directional_shadow_split_2
directional_shadow_split_3 disabled doppler_tracking duplicate enabled exclude_parent
extra_cull_margin far find_node find_parent force_raycast_update force_update_transform fov friction
frustum_offset get_aabb get_angular_damp get_angular_velocity get_audio_bus get_axis_lock
get_bake_mode get_bounce get_camera_transform get_capture_input_on_drag get_cast_shadows_setting
get_cast_to get_child get_child_count get_children get_collider get_collider_shape
get_collider_shape_index get_collider_velocity get_colliding_bodies get_collision_exceptions
get_collision_layer get_collision_layer_bit get_collision_mask get_collision_mask_bit
get_collision_normal get_collision_point get_color get_constant_angular_velocity
get_constant_linear_velocity get_cull_mask get_cull_mask_bit get_doppler_tracking
get_exclude_parent_body get_extra_cull_margin get_filename get_flag get_floor_normal
get_floor_velocity get_fov get_friction get_frustum get_frustum_offset get_global_transform
get_gravity_scale get_groups get_h_offset get_index get_inverse_inertia_tensor get_keep_aspect_mode
get_layer_mask get_layer_mask_bit get_linear_damp get_linear_velocity get_local_shape
get_lod_max_distance get_lod_max_hysteresis get_lod_min_distance get_lod_min_hysteresis get_mass
get_material_override get_max_contacts_reported get_mesh get_mode get_name get_node get_node_or_null
get_normal get_overlapping_areas get_overlapping_bodies get_owner get_param get_parent
get_parent_spatial get_path get_path_to get_physics_material_override get_physics_process_delta_time
get_position get_position_in_parent get_priority get_process_delta_time get_process_priority
get_projection get_remainder get_reverb_amount get_reverb_bus get_reverb_uniformity get_rotation
get_rotation_degrees get_safe_margin get_scale get_shadow_color get_shadow_depth_range
get_shadow_detail get_shadow_mode get_shadow_reverse_cull_face get_shape get_shape_owners get_size
get_skeleton_path get_skin get_slide_collision get_slide_count get_surface_material
get_surface_material_count get_time_left get_timer_process_mode get_transform get_transformed_aabb
get_translation get_travel get_v_offset get_wait_time get_weight get_zfar get_znear global_rotate
global_scale global_transform global_translate gravity_scale h_offset has_autostart has_node
has_shadow hide input_capture_on_drag input_event input_ray_pickable is_a_parent_of is_able_to_sleep
is_blend_splits_enabled is_collide_with_areas_enabled is_collide_with_bodies_enabled is_colliding
is_contact_monitor_enabled is_current is_disabled is_displayed_folded is_editor_only is_enabled
is_greater_than is_in_group is_inside_tree is_local_transform_notification_enabled is_monitorable
is_monitoring is_negative is_on_ceiling is_on_floor is_on_wall is_one_shot is_overriding_audio_bus
is_paused is_physics_processing is_physics_processing_internal is_position_behind is_processing
is_processing_input is_processing_internal is_processing_unhandled_input
is_processing_unhandled_key_input is_ray_pickable is_scale_disabled is_set_as_toplevel
is_shape_owner_disabled is_sleeping is_stopped is_transform_notification_enabled
is_using_continuous_collision_detection is_using_custom_integrator is_using_reverb_bus is_visible
is_visible_in_tree keep_aspect layers light_bake_mode light_color light_cull_mask light_energy
light_indirect_energy light_negative light_specular linear_damp linear_velocity local_shape
lod_max_distance lod_max_hysteresis lod_min_distance lod_min_hysteresis look_at
look_at_from_position make_convex_from_brothers make_current mass material_override mesh mode
monitorable monitoring mouse_entered mouse_exited move_and_collide move_and_slide
move_and_slide_with_snap move_child move_lock_x move_lock_y move_lock_z name near normal
omni_attenuation omni_range omni_shadow_detail omni_shadow_mode one_shot orthonormalize
overlaps_area overlaps_body owner paused physics_material_override position print_tree
print_tree_pretty priority process_mode project_local_ray_normal project_position project_ray_normal
project_ray_origin projection queue_free raise ready remainder remove_and_skip remove_child
remove_collision_exception_with remove_exception remove_from_group renamed reverb_bus_amount
reverb_bus_enable reverb_bus_name reverb_bus_uniformity rotate rotate_object_local rotate_x rotate_y
rotate_z rotation rotation_degrees scale scale_object_local set_angular_damp set_angular_velocity
set_as_toplevel set_audio_bus set_audio_bus_override set_autostart set_axis_lock set_axis_velocity
set_bake_mode set_blend_splits set_bounce set_can_sleep set_capture_input_on_drag
set_cast_shadows_setting set_cast_to set_collide_with_areas set_collide_with_bodies
set_collision_layer set_collision_layer_bit set_collision_mask set_collision_mask_bit set_color
set_constant_angular_velocity set_constant_linear_velocity set_contact_monitor set_cull_mask
set_cull_mask_bit set_current set_custom_aabb set_disable_scale set_disabled set_display_folded
set_doppler_tracking set_enabled set_exclude_parent_body set_extra_cull_margin set_flag set_fov
set_friction set_frustum set_frustum_offset set_global_transform set_gravity_scale set_h_offset
set_identity set_ignore_transform_notification set_keep_aspect_mode set_layer_mask
set_layer_mask_bit set_linear_damp set_linear_velocity set_lod_max_distance set_lod_max_hysteresis
set_lod_min_distance set_lod_min_hysteresis set_mass set_material_override set_max_contacts_reported
set_mesh set_mode set_monitorable set_monitoring set_name set_negative set_notify_local_transform
set_notify_transform set_one_shot set_orthogonal set_owner set_param set_paused set_perspective
set_physics_material_override set_physics_process set_priority set_process set_process_input
set_process_unhandled_input set_process_unhandled_key_input set_projection set_ray_pickable
set_reverb_amount set_reverb_bus set_reverb_uniformity set_rotation set_rotation_degrees
set_safe_margin set_scale set_shadow set_shadow_color set_shadow_depth_range set_shadow_detail
set_shadow_mode set_shadow_reverse_cull_face set_shape set_size set_skeleton_path set_skin
set_sleeping set_surface_material set_timer_process_mode set_transform set_translation
set_use_continuous_collision_detection set_use_custom_integrator set_use_reverb_bus set_v_offset
set_visible set_wait_time set_weight set_zfar set_znear shadow_bias shadow_color shadow_contact
shadow_enabled shadow_reverse_cull_face shape shape_find_owner shape_owner_get_owner
shape_owner_get_shape shape_owner_get_shape_count shape_owner_get_shape_index
shape_owner_get_transform show size skeleton skin sleeping sleeping_state_changed spot_angle
spot_angle_attenuation spot_attenuation spot_range start stop test_move time_left timeout to_global
to_local transform translate translate_object_local translation travel tree_entered tree_exited
tree_exiting unproject_position update_configuration_warning use_in_baked_light v_offset
visibility_changed visible wait_time weight
""".split())

VARIANT_MEMBERS = frozenset("""
x y z w r g b a h s v r8 g8 b8 a8 origin basis position size end normal d
length length_squared normalized is_normalized distance_to distance_squared_to dot cross angle_to
angle direction_to linear_interpolate lerp slerp cubic_interpolate abs floor ceil round sign
rotated bounce reflect slide project snapped move_toward inverse affine_inverse orthonormalized
xform xform_inv get_euler looking_at translated scaled get_scale get_rotation_quat tdotx tdoty
tdotz is_equal_approx limit_length clamped posmod posmodv min_axis max_axis outer aspect tangent
append append_array push_back push_front pop_back pop_front size empty clear has has_all erase
find rfind find_last insert remove sort sort_custom invert duplicate keys values front back count
max min bsearch resize slice hash to_lower to_upper begins_with ends_with split strip_edges
substr left right format to_html lightened darkened contrasted inverted to_rgba32 to_argb32
blend is_valid_integer is_valid_float to_int to_float capitalize replace countn match matchn
join sum intersects encloses has_point get_area has_no_area merge grow expand
UP DOWN LEFT RIGHT FORWARD BACK ZERO ONE AXIS_X AXIS_Y AXIS_Z IDENTITY FLIP_X FLIP_Y FLIP_Z
red green blue white black yellow gray orange purple cyan magenta transparent
""".split())
"""Methods and fields of GDScript's built-in value types (vectors, colours, arrays, strings)."""

KEYWORDS = frozenset("""
extends func var const onready export signal enum if elif else for while in match return pass
break continue and or not self true false null static setget yield as is void PI TAU INF NAN
""".split())

REFUSED_KEYWORDS = {
    "tool": "runs the script in the editor",
    "class_name": "registers a global class; use preload(\"res://....gd\")",
    "class": "declares an inner class",
    "breakpoint": "stops the engine",
    "remote": "is networking", "master": "is networking", "puppet": "is networking",
    "remotesync": "is networking", "mastersync": "is networking", "puppetsync": "is networking",
    "sync": "is networking", "slave": "is networking",
}

BUILTIN_FUNCTIONS = frozenset("""
abs sign min max clamp lerp lerp_angle inverse_lerp range_lerp smoothstep move_toward ease
sqrt pow exp log sin cos tan asin acos atan atan2 sinh cosh tanh deg2rad rad2deg db2linear
linear2db round floor ceil stepify step_decimals fmod fposmod posmod wrapf wrapi is_nan is_inf
is_equal_approx is_zero_approx nearest_po2 polar2cartesian cartesian2polar randf randi
rand_range rand_seed range len str int float bool typeof print prints printt print_debug
push_warning assert char ord to_json parse_json validate_json hash is_instance_valid
Color8 ColorN
""".split())

BUILTIN_TYPES = frozenset("""
Vector2 Vector3 Color Transform Transform2D Basis Quat Rect2 AABB Plane NodePath Array
Dictionary String PoolByteArray PoolIntArray PoolRealArray PoolStringArray PoolVector2Array
PoolVector3Array PoolColorArray
""".split())

TYPE_CONSTANTS = frozenset(
    f"TYPE_{t}" for t in "NIL BOOL INT REAL STRING VECTOR2 RECT2 VECTOR3 TRANSFORM2D PLANE QUAT "
    "AABB BASIS TRANSFORM COLOR NODE_PATH RID OBJECT DICTIONARY ARRAY RAW_ARRAY INT_ARRAY "
    "REAL_ARRAY STRING_ARRAY VECTOR2_ARRAY VECTOR3_ARRAY COLOR_ARRAY MAX".split()
) | frozenset("OK FAILED KEY_SPACE KEY_ENTER KEY_LEFT KEY_RIGHT KEY_UP KEY_DOWN".split())

NODE_CLASSES = frozenset("""
Node Spatial StaticBody RigidBody KinematicBody Area CollisionShape CollisionPolygon MeshInstance
OmniLight SpotLight DirectionalLight Camera Position3D RayCast Timer Node2D StaticBody2D
RigidBody2D KinematicBody2D Area2D CollisionShape2D CollisionPolygon2D Position2D RayCast2D
""".split())
"""The node types scenes may hold and scripts may extend (nothing that loads files, plays
animations that call methods, or runs code by name)."""

RESOURCE_CLASSES = frozenset("""
BoxShape SphereShape CapsuleShape CylinderShape PlaneShape RayShape ConvexPolygonShape
ConcavePolygonShape RectangleShape2D CircleShape2D CapsuleShape2D SegmentShape2D
ConvexPolygonShape2D CubeMesh SphereMesh CapsuleMesh CylinderMesh PlaneMesh PrismMesh QuadMesh
SpatialMaterial PhysicsMaterial KinematicCollision
""".split())
"""The resource types scenes may hold (shapes, primitive meshes, materials): no scripts, no
files, no animations."""

SCRIPT_CLASSES = NODE_CLASSES | RESOURCE_CLASSES | frozenset({"Input", "Reference"})
"""Classes a script may name (``extends``, ``is``, ``.new()``, their constants)."""

INPUT_METHODS = frozenset(
    "is_action_pressed is_action_just_pressed is_action_just_released get_action_strength".split()
)
"""What a script may ask ``Input`` (reading actions; never pressing them)."""
