"""``game-godot-v0``: build and fix Godot 3 scenes and scripts; the engine itself grades."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from pydantic import Field

from taskgym.domain import (
    Requirement,
    RewardResult,
    SandboxSpec,
    Session,
    Task,
    TaskEnv,
    Tool,
    ToolArgs,
    ToolResult,
    shell_tools,
)
from taskgym.domains.game.generators import FAMILIES
from taskgym.domains.game.verifier import ENGINE, INSIDE_DIR, INSIDE_MOUNT, grade_project
from taskgym.errors import SandboxError

__all__ = ["GameEnv"]

REPLY = ".taskgym"
"""Workspace folder (hidden from the engine) where the tools leave their replies."""
REPLY_BYTES = 4 << 20
SCENE = Field(default="res://main.tscn", description="The scene file, as a res:// path (res:// is /app).")


class TreeArgs(ToolArgs):
    path: str = SCENE


class EditArgs(ToolArgs):
    path: str = SCENE
    edits: list[dict[str, Any]] = Field(min_length=1, max_length=200, description=(
            "Applied in order, all or nothing. Each is one of: {action: add, parent, name, type, "
            "properties?}; {action: remove, node}; {action: reparent, node, parent, keep_global?}; "
            '{action: set, node, property, value} (vectors [x,y,z], colours "#rrggbb", resources '
            '{type: BoxShape, extents: [...]}, script "res://x.gd"); {action: connect, node, signal, '
            "target, method}; {action: instance, parent, name, scene}; {action: group, node, group}. "
            'Node paths are relative to the scene root ("." is the root).'))


class ScriptArgs(ToolArgs):
    path: str = Field(description="res://....gd")
    code: str = Field(description="The whole GDScript (Godot 3) source.")


class AttachArgs(ToolArgs):
    path: str = SCENE
    node: str = Field(description="Node path relative to the scene root.")
    script: str = Field(description="res://....gd")


class RunArgs(ToolArgs):
    path: str = SCENE
    frames: int = Field(default=60, ge=1, le=3600, description="Physics frames to run.")
    inputs: list[tuple[int, str, bool]] = Field(default=[], max_length=1000, description=(
        "Input events [frame, action, pressed] (actions of project.godot's input map)."))
    nodes: list[str] = Field(default=[], max_length=200, description="Nodes to dump (default: all).")
    fixed_fps: int = Field(default=60, ge=1, le=1000)


def read_reply(session: Session) -> dict[str, Any]:
    """The tool's reply file, as an object with a boolean ``ok`` (and a string ``error`` when
    not ok). Project code run by ``run_scene`` can write that file, so anything else — no
    file, a link, over :data:`REPLY_BYTES`, not UTF-8, not JSON, a list, ``null``, wrong
    types — is an error reply: the agent's doing, never an exception out of ``step``."""
    try:
        data = session.read_file(f"{REPLY}/reply.json", limit=REPLY_BYTES + 1)
    except (OSError, SandboxError):
        return {"ok": False, "error": "the engine gave no reply (see its log)"}
    try:
        if len(data) > REPLY_BYTES:
            raise ValueError(f"over {REPLY_BYTES >> 20} MB")
        reply = json.loads(data.decode("utf-8"))
        if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
            raise ValueError("not an object with a boolean ok")
        if not reply["ok"] and not isinstance(reply.get("error"), str):
            raise ValueError("an error without a message")
        if "nodes" in reply and not isinstance(reply["nodes"], list):
            raise ValueError("nodes is not a list")
    except ValueError as error:
        return {"ok": False, "error": f"the engine's reply is malformed ({error}); did project code "
                                      "write .taskgym/reply.json?"}
    return reply


class GameEnv(TaskEnv):
    """A Godot 3 project in ``/app``; a hidden GDScript check run by the engine decides."""

    domain = "game"
    description = "Build and fix Godot 3 scenes and scripts; a hidden engine-run check decides."
    image = "taskgym/game-godot-v0"
    curated = "game-godot-v0/tasks"
    generators = FAMILIES
    generate = "taskgym.domains.game.generators:generate"
    extra = "game"
    requires_programs = {ENGINE: "godot3-server"}  # the headless engine, on this host
    grader_requirements = (Requirement(f"game: {ENGINE}", programs=(ENGINE,),
                                       packages="godot3-server"),)

    def sandbox_spec(self, task: Task) -> SandboxSpec:
        spec = super().sandbox_spec(task)
        return spec.model_copy(update={"host_python": True, "ro_binds": {str(INSIDE_DIR): INSIDE_MOUNT}})

    def workspace_seed(self, task: Task) -> Path | None:
        return task.path / "project"

    # -- tools ------------------------------------------------------------------------
    def _engine(self, request: dict[str, Any], fps: int = 60) -> tuple[dict[str, Any], str]:
        """Run tool.gd on ``request``: (its reply, the engine's log)."""
        timeout = max(1.0, self.command_timeout() - 2)
        command = (
            f"mkdir -p {REPLY} && rm -f {REPLY}/reply.json && printf %s {shlex.quote(json.dumps(request))}"
            f" > {REPLY}/request.json && TASKGYM_GAME_REQUEST={REPLY}/request.json "
            f"TASKGYM_GAME_REPLY={REPLY}/reply.json timeout -k 1 {timeout:.0f} {ENGINE} --no-window "
            f"--audio-driver Dummy --fixed-fps {fps} --path /app -s {INSIDE_MOUNT}/tool.gd 2>&1 "
            f"| grep -v -E 'locale|At: core/(translation|object|resource)|^Godot Engine|^ ?$|leaked at "
            f"exit|still in use at exit' | tail -c 6000")
        result = self.session.exec(command, timeout=timeout + 5)
        log = result.stdout + ("\n[the engine ran past its time and was stopped]" if result.timed_out else "")
        return read_reply(self.session), log.strip()

    def _answer(self, reply: dict[str, Any], log: str, shown: str = "") -> ToolResult:
        text = shown or json.dumps(reply.get("nodes", reply), indent=None)[:30000]
        if log:
            text += f"\n--- engine log ---\n{log}"
        if not reply.get("ok"):
            message = str(reply.get("error"))
            return ToolResult(f"error: {message}" + (f"\n--- engine log ---\n{log}" if log else ""),
                              error=message)
        return ToolResult(text)

    def _tree(self, args: TreeArgs) -> ToolResult:
        return self._answer(*self._engine({"op": "tree", "scene": args.path}))

    def _edit(self, args: EditArgs) -> ToolResult:
        return self._answer(*self._engine({"op": "edit", "scene": args.path, "edits": args.edits}))

    def _write_script(self, args: ScriptArgs) -> ToolResult:
        if not args.path.startswith("res://") or not args.path.endswith(".gd") or ".." in args.path:
            return ToolResult("error: path must be res://....gd", error="path must be res://....gd")
        self.session.write_file(args.path.removeprefix("res://"), args.code.encode())
        reply, log = self._engine({"op": "check", "script": args.path})
        return self._answer(reply, log, f"wrote {args.path}; it compiles")

    def _attach(self, args: AttachArgs) -> ToolResult:
        edit = {"action": "set", "node": args.node, "property": "script", "value": args.script}
        return self._answer(*self._engine({"op": "edit", "scene": args.path, "edits": [edit]}))

    def _run(self, args: RunArgs) -> ToolResult:
        request = {"op": "run", "scene": args.path, "frames": args.frames, "nodes": args.nodes,
                   "inputs": [list(i) for i in args.inputs]}
        return self._answer(*self._engine(request, args.fixed_fps))

    def _render(self, args: TreeArgs) -> ToolResult:
        reply, log = self._engine({"op": "tree", "scene": args.path})
        if not reply.get("ok"):
            return self._answer(reply, log)
        result = self.session.exec(f"python3 -I {INSIDE_MOUNT}/render.py {REPLY}/reply.json "
                                   f"{REPLY}/render.png", timeout=60)
        if result.exit_code != 0:
            return ToolResult(f"error: render failed: {result.stderr[-1000:]}", error="render failed")
        return ToolResult(f"rendered {args.path}: top (X-Z) and side (X-Y) views attached",
                          images=(self.session.read_file(f"{REPLY}/render.png"),))

    def make_tools(self) -> list[Tool]:
        return [
            Tool("scene_tree", "A scene's nodes: types, transforms, shapes, lights, scripts, groups, "
                 "collision layers, connected signals.", TreeArgs, self._tree),
            Tool("edit_scene", "Edit a scene with the engine (it writes valid .tscn); a bad edit is an "
                 "error and the file is left as it was.", EditArgs, self._edit),
            Tool("write_script", "Write a GDScript file and compile it (errors with file and line).",
                 ScriptArgs, self._write_script),
            Tool("attach_script", "Attach a script to a node of a scene.", AttachArgs, self._attach),
            Tool("run_scene", "Run a scene headless for N physics frames with input events; returns the "
                 "engine log (script errors with file:line) and a state dump.", RunArgs, self._run),
            Tool("render", "A top-down and a side PNG of a scene drawn from node transforms, shapes and "
                 "lights.", TreeArgs, self._render),
            *shell_tools(lambda: self.session, self.command_timeout),
            self.submit_tool("Grade the project with the hidden check; ends the episode."),
        ]

    # -- grading ----------------------------------------------------------------------
    def verify(self, task: Task, session: Session) -> RewardResult:
        return grade_project(task, session, self.backend, self.container_image(task))

    def oracle_actions(self, task: Task) -> list[dict[str, Any]]:
        folder = task.path / "solution"
        files = [p for p in sorted(folder.rglob("*")) if p.is_file()]
        writes = [{"tool": "write_file", "args": {"path": str(p.relative_to(folder)),
                                                  "content": p.read_text()}} for p in files]
        return [*writes, {"tool": "submit", "args": {}}]
