"""tool_class: one class per env id whose public functions are exactly the env's tools, typed
and documented from their JSON schemas (transformers' own reading of them is checked in
test_trainer_packages.py, in the trainers venv)."""

from __future__ import annotations

import inspect
from typing import Any, Literal, Optional, Union

import pytest
from pydantic import BaseModel, Field

import taskgym
from taskgym.core.tool import Tool, ToolArgs, ToolResult
from taskgym.errors import ConfigError, UnknownEnvError
from taskgym.integrations import (
    NO_DESCRIPTION,
    EnvTools,
    env_of,
    env_tools,
    tool_class,
    tool_method,
)
from taskgym.integrations.tool_methods import python_type


def trl_visible(cls: type) -> list[str]:
    """The tools TRL's GRPOTrainer finds on an environment class (grpo_trainer.py, 1.16)."""
    return sorted(name for name, _ in inspect.getmembers(cls, predicate=inspect.isfunction)
                  if name not in ("reset", "get_reward") and not name.startswith("_"))


@pytest.mark.parametrize("env_id", sorted(taskgym.list_envs()))
def test_trl_sees_exactly_the_env_tools(env_id: str) -> None:
    cls = tool_class(env_id)
    assert trl_visible(cls) == sorted(t.name for t in env_tools(env_id))
    # nothing else public at all: no close, no env attribute for a trainer to mistake
    public = {n for n in dir(cls) if not n.startswith("_")}
    assert public == {t.name for t in env_tools(env_id)}
    for tool in env_tools(env_id):
        method = getattr(cls, tool.name)
        params = list(inspect.signature(method).parameters.values())[1:]
        assert [p.name for p in params] == list(tool.json_schema()["properties"])
        assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params)
        required = set(tool.json_schema().get("required", ()))
        assert {p.name for p in params if p.default is inspect.Parameter.empty} == required
        doc = inspect.getdoc(method) or ""
        assert doc.startswith(tool.description)
        for p in params:  # transformers refuses a method with an undocumented argument
            assert f"\n    {p.name}: " in doc


def test_env_tools_of_an_id_need_no_env_requirements(monkeypatch: pytest.MonkeyPatch) -> None:
    # the finance env needs pdf packages to be made; its tools are read from the class
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "pypdfium2" else real(name, *a))
    with pytest.raises(taskgym.MissingDependencyError):
        taskgym.make("finance-pdf-v0")
    assert "read_page" in [t.name for t in env_tools("finance-pdf-v0")]


def test_class_name_and_an_unknown_id() -> None:
    assert tool_class("coding-terminal-v0").__name__ == "CodingTerminalV0"
    assert tool_class("taskgym/coding-terminal-v0", class_name="Coding").__name__ == "Coding"
    with pytest.raises(UnknownEnvError, match="coding-terminal-v0"):
        tool_class("no-such-env-v0")
    with pytest.raises(ConfigError, match="not a Python identifier"):
        tool_class("coding-terminal-v0", class_name="two words")


class FakeEnv:
    """Enough of an env for the forwarding: tools and a step that records its actions."""

    def __init__(self, tools: list[Tool]) -> None:
        self.tools = tools
        self.unwrapped = self
        self.spec = None
        self.actions: list[Any] = []

    def step(self, action: Any) -> tuple[dict[str, str], float, bool, bool, dict[str, Any]]:
        self.actions.append(action)
        return {"text": f"ran {action['tool']}"}, 0.0, False, False, {}


class Scale(BaseModel):
    factor: float = Field(gt=0, le=10, description="How much.")
    axes: list[Literal["x", "y", "z"]] = Field(default_factory=list)


class PaintArgs(ToolArgs):
    colour: Literal["red", "green"] = Field(description="Which paint.")
    coats: int = Field(1, ge=1, le=5, description="Coats,\nthick ones.")
    scale: Scale | None = None
    tags: dict[str, int] = {}
    note: str | None = Field(None, description="Returns: nothing. Args: none.")


def tool(name: str, args: type[BaseModel] = PaintArgs) -> Tool:
    return Tool(name, f"The {name} tool.", args, lambda a: ToolResult("ok"))


def test_methods_forward_keyword_calls_to_the_held_env() -> None:
    env = FakeEnv([tool("paint"), tool("submit", ToolArgs)])
    cls = tool_class(env)  # type: ignore[arg-type]
    assert cls.__name__ == "FakeEnv" and trl_visible(cls) == ["paint", "submit"]
    obj = cls(env)  # type: ignore[arg-type]
    assert obj.paint(colour="red", coats=2) == "ran paint"  # type: ignore[attr-defined]
    assert obj.submit() == "ran submit"  # type: ignore[attr-defined]
    # what the caller gave, as given: the env validates it (and reports what is wrong)
    assert obj.paint(colour="blue", bogus=1) == "ran paint"  # type: ignore[attr-defined]
    assert env.actions == [{"tool": "paint", "args": {"colour": "red", "coats": 2}},
                           {"tool": "submit", "args": {}},
                           {"tool": "paint", "args": {"colour": "blue", "bogus": 1}}]
    with pytest.raises(TypeError, match="keyword arguments only"):
        obj.paint("red")  # type: ignore[attr-defined]
    assert env_of(obj) is env
    with pytest.raises(ConfigError, match="made from an env"):
        cls()


def test_an_env_with_other_tools_is_refused() -> None:
    cls = tool_class(FakeEnv([tool("paint")]))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="make the class from this env"):
        cls(FakeEnv([tool("draw")]))  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["reset", "get_reward", "_hidden", "class", "two-words", "9lives"])
def test_tool_names_that_cannot_be_methods_are_refused(name: str) -> None:
    with pytest.raises(ConfigError, match=name if name != "class" else "identifier"):
        tool_class(FakeEnv([tool(name)]))  # type: ignore[arg-type]


@pytest.mark.parametrize("arg", ["class", "self", "a-b"])
def test_argument_names_that_cannot_be_parameters_are_refused(arg: str) -> None:
    spec = {"name": "f", "parameters": {"type": "object", "properties": {arg: {"type": "string"}}}}
    with pytest.raises(ConfigError, match="cannot be a Python parameter"):
        tool_method(spec)


def test_types_defaults_and_docstring_from_the_schema() -> None:
    method = tool_method(tool("paint").openai()["function"])
    sig = inspect.signature(method)
    hints = {name: p.annotation for name, p in sig.parameters.items() if name != "self"}
    assert hints == {"colour": Literal["red", "green"], "coats": int,
                     "scale": Optional[dict], "tags": dict[str, int],  # noqa: UP045
                     "note": Optional[str]}  # noqa: UP045
    assert sig.parameters["coats"].default == 1
    assert sig.parameters["colour"].default is inspect.Parameter.empty
    assert sig.return_annotation is str
    doc = method.__doc__
    assert 'colour: Which paint. (choices: ["red", "green"])' in doc
    assert "coats: Coats, thick ones." in doc  # one line
    assert f"scale: {NO_DESCRIPTION}" in doc
    assert "note: Returns : nothing. Args : none." in doc  # not read as sections
    assert doc.endswith("Returns:\n    The observation's text.")


@pytest.mark.parametrize(("schema", "hint"), [
    ({"type": "string"}, str),
    ({"type": "integer"}, int),
    ({"type": "number"}, float),
    ({"type": "boolean"}, bool),
    ({"type": ["string", "null"]}, Optional[str]),  # noqa: UP045
    ({"enum": [1, 2, 3]}, Literal[1, 2, 3]),
    ({"const": "only"}, Literal["only"]),
    ({"type": "array"}, list),
    ({"type": "array", "items": {"type": "integer"}}, list[int]),
    ({"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}]}, tuple[int, str]),
    ({"type": "array", "prefixItems": [{"type": "integer"}]}, list[int]),
    ({"type": "object"}, dict),
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, dict),
    ({"type": "object", "additionalProperties": {"type": "number"}}, dict[str, float]),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, Union[int, str]),  # noqa: UP007
    ({"$ref": "#/$defs/Colour"}, Literal["red", "green"]),
    ({"allOf": [{"$ref": "#/$defs/Colour"}]}, Literal["red", "green"]),
    ({"$ref": "#/$defs/Missing"}, Any),
    ({}, Any),
])
def test_python_types_of_schemas(schema: dict[str, Any], hint: Any) -> None:
    assert python_type(schema, {"Colour": {"enum": ["red", "green"]}}) == hint


def test_a_schema_that_refers_to_itself_ends_in_any() -> None:
    defs = {"Loop": {"type": "array", "items": {"$ref": "#/$defs/Loop"}}}
    hint = python_type({"$ref": "#/$defs/Loop"}, defs)
    depth = 0
    while hint is not Any:
        assert hint.__origin__ is list
        hint, depth = hint.__args__[0], depth + 1
    assert 10 < depth < 40


def test_env_tools_of_a_made_env_and_of_something_else() -> None:
    env = taskgym.make("coding-terminal-v0")
    try:
        assert [t.name for t in env_tools(env)] == [t.name for t in env_tools("coding-terminal-v0")]
        cls = tool_class(env)
        assert cls.__name__ == "CodingTerminalV0"
        assert env_of(cls(env)) is env
        with pytest.raises(ConfigError, match="made from an env"):
            cls()
        with pytest.raises(ConfigError, match="make_kwargs are for an env id"):
            tool_class(env, max_steps=3)
    finally:
        env.close()
    with pytest.raises(ConfigError, match="not a taskgym env"):
        env_tools(object())  # type: ignore[arg-type]
    assert issubclass(cls, EnvTools)


@pytest.mark.sandbox
def test_a_real_episode_through_the_methods() -> None:
    cls = tool_class("coding-terminal-v0")
    obj = cls()
    env = env_of(obj)
    try:
        env.reset(seed=0)
        assert "error" not in obj.write_file(path="note.txt", content="hello\n")  # type: ignore[attr-defined]
        assert "hello" in obj.read_file(path="note.txt")  # type: ignore[attr-defined]
        assert "hello" in obj.bash(command="cat note.txt")  # type: ignore[attr-defined]
        bad = obj.bash(comand="ls")  # type: ignore[attr-defined]
        assert bad.startswith("error:") and "comand" in bad
    finally:
        env.close()


@pytest.mark.sandbox
def test_the_trainers_page_examples_run() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "trainers.md").read_text()
    # the shared core's sections; each trainer's own section needs its package or a server
    # (their scripts under scripts/ test those)
    shared = page.split("## Testing against the real packages")[0]
    blocks = [b.split("```", 1)[0] for b in shared.split("```python\n")[1:]]
    runnable = [b for b in blocks if b.startswith(("import ", "from "))]
    assert len(runnable) == 3
    for block in runnable:
        exec(compile(block, "docs/trainers.md", "exec"), {})
