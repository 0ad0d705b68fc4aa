"""Build the project the engine grades from the agent's: only what passed an allow-list.

The agent's folder is never given to the engine. :func:`build` copies into a fresh folder the
files the engine may load — exact lower-case ``.tscn``, ``.tres`` and ``.gd`` (no ``.gd`` at
all for a task whose ``[game] scripts`` is ``"none"``), from folders that are not hidden, no
links — after checking each with :mod:`text_resources` and :mod:`gdscript`. Any other file
the engine could load as code or as a resource (any case of ``.gd``, ``.gdc``, ``.gde``, ``.scn``,
``.res``, ``.gdns``, ``.cs``, native libraries, ``override.cfg``..., or a script anywhere in a
hidden folder such as ``.import``) refuses the grade with a reason, rather than being silently
left out. ``project.godot`` is never copied: :data:`SETTINGS` is the grader's, with no
autoload, plugin or singleton, and every physics setting pinned to the engine's defaults.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import gdscript
import text_resources

GRADED = (".tscn", ".tres", ".gd")
LOADABLE = frozenset("""
gd gdc gde gdns gdnlib gdnative cs vs vshader shader gdshader so dll dylib framework scn res tscn
tres escn import remap pck zip translation glb gltf dae obj fbx mesh anim material
""".split())
"""Extensions (of any case) the engine can load as code or resources."""
SETTINGS_NAMES = frozenset({"override.cfg", "project.binary", "engine.cfg", "engine.cfb"})
MAX_FILES = 200
MAX_BYTES = 1 << 20
SETTINGS = """config_version=4

[application]

config/name="graded"

[physics]

common/physics_fps=60
common/physics_jitter_fix=0.5
3d/physics_engine="DEFAULT"
3d/active_soft_world=true
3d/default_gravity=9.8
3d/default_gravity_vector=Vector3( 0, -1, 0 )
3d/default_linear_damp=0.1
3d/default_angular_damp=0.1
2d/default_gravity=98
2d/default_gravity_vector=Vector2( 0, 1 )
2d/default_linear_damp=0.1
2d/default_angular_damp=1.0
"""
"""The graded project's settings: the engine's physics defaults, written out so that a
project can change none of them."""


class Refused(Exception):
    """The project may not be graded; the message says which file and why."""


def _hidden(rel: Path) -> bool:
    return any(part.startswith(".") for part in rel.parts)


def collect(app: Path, scripts_allowed: bool) -> dict[str, str]:
    """The graded files of ``app`` (res:// path -> text); :class:`Refused` when something
    the engine could load is not allowed."""
    found: dict[str, str] = {}
    for top, dirs, names in os.walk(app, followlinks=False):
        for name in sorted(dirs + names):
            path = Path(top) / name
            rel = path.relative_to(app)
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                raise Refused(f"{rel} is a symbolic link; graded projects hold plain files")
            if stat.S_ISDIR(mode):
                continue
            suffix = path.suffix[1:]
            if name.lower() in SETTINGS_NAMES:
                raise Refused(f"{rel} would override the project's settings; the grader writes its own")
            if suffix.lower() not in LOADABLE:
                continue  # a file the engine does not load: not copied
            if not stat.S_ISREG(mode):
                raise Refused(f"{rel} is not a regular file")
            if _hidden(rel):
                raise Refused(f"{rel} is in a hidden folder, which the grader does not load; "
                              "keep scenes and scripts in visible folders")
            if path.suffix not in GRADED:
                raise Refused(f"{rel}: only .tscn, .tres and .gd files (lower case) are graded; "
                              "save scenes as text and scripts as .gd source")
            if path.suffix == ".gd" and not scripts_allowed:
                raise Refused(f"{rel}: this task is solved without scripts (remove every .gd file)")
            if path.stat().st_size > MAX_BYTES:
                raise Refused(f"{rel} is over {MAX_BYTES >> 20} MB")
            try:
                found[f"res://{rel.as_posix()}"] = path.read_bytes().decode("utf-8")
            except UnicodeDecodeError:
                raise Refused(f"{rel} is not UTF-8 text") from None
            except OSError as error:
                raise Refused(f"{rel} cannot be read ({error.strerror})") from None
            if len(found) > MAX_FILES:
                raise Refused(f"more than {MAX_FILES} scenes, resources and scripts")
    return found


def build(app: Path, dest: Path, scripts_allowed: bool) -> None:
    """Check ``app`` and write the graded project at ``dest`` (created, mode 0700)."""
    files = collect(app, scripts_allowed)
    scripts = {p: t for p, t in files.items() if p.endswith(".gd")}
    why = gdscript.check_project(scripts, files)
    if why:
        raise Refused(why)
    methods: set[str] = set()
    for text in scripts.values():
        toks = gdscript.tokens(text)
        methods |= {toks[i + 1].text for i, t in enumerate(toks[:-1]) if t.text == "func"}
    for path, text in files.items():
        if not path.endswith(".gd"):
            why = text_resources.check_file(path, text, set(files), methods)
            if why:
                raise Refused(why)
    dest.mkdir(mode=0o700)
    (dest / "project.godot").write_text(SETTINGS)
    for path, text in files.items():
        target = dest / path.removeprefix("res://")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
