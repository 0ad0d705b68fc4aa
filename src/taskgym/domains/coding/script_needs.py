"""What a Harbor ``tests/test.sh`` needs, as far as a static read can tell.

:func:`script_needs` reads the script's words (with :mod:`shlex`, each line after a
continuation joined, each ``$(...)`` read again) and lists the commands it runs and the
pytest plugins its pytest runs ask for: each flag of :data:`PLUGIN_FLAGS` and each
``-p NAME``. Reset's preflight (:mod:`taskgym.core.preflight`) checks them in the grader's
view, so a task whose grader would fail for want of a plugin (``pytest --ctrf`` where
pytest-json-ctrf is missing) is refused before its episode starts.

A static read cannot tell, and so leaves out: commands named through a variable, ``eval``,
an alias or a sourced file; what the script installs as it runs (``pip install``, ``uv``,
``apt-get install``, a download): every command after the script's first install (pytest
run through ``uvx`` included) is left to the run; plugins pytest loads by
``pytest.ini`` or ``conftest.py`` (``pytest_plugins``); and which branch of an ``if`` runs.

One thing it refuses at once (:func:`refuse_unloaded_plugins`): a pytest run that asks for a
plugin by its flag alone (``pytest --ctrf``, no ``-p ctrf``). taskgym's grader turns plugin
autoloading off, so that flag fails every grade, whether the plugin is installed or not.
"""

from __future__ import annotations

import functools
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from taskgym.core.preflight import Requirement
from taskgym.core.task import Task
from taskgym.errors import ConfigError

__all__ = ["DEBIAN_PLUGINS", "PLUGIN_FLAGS", "ScriptNeeds", "cached_script_needs",
           "refuse_unloaded_plugins", "script_needs"]

PLUGIN_FLAGS: dict[str, tuple[str, str]] = {
    "--ctrf": ("pytest-json-ctrf", "ctrf"),
    "--cov": ("pytest-cov", "pytest_cov"),
    "--json-report": ("pytest-json-report", "pytest_jsonreport"),
    "--timeout": ("pytest-timeout", "pytest_timeout"),
    "-n": ("pytest-xdist", "xdist"),
    "--numprocesses": ("pytest-xdist", "xdist"),
    "--html": ("pytest-html", "pytest_html"),
    "--reruns": ("pytest-rerunfailures", "pytest_rerunfailures"),
    "--benchmark-only": ("pytest-benchmark", "pytest_benchmark"),
    "--asyncio-mode": ("pytest-asyncio", "pytest_asyncio"),
}
"""A pytest flag (``--flag`` or ``--flag=value``) → (the distribution that adds it, its
module)."""
_DISTRIBUTIONS = {module: dist for dist, module in PLUGIN_FLAGS.values()}
DEBIAN_PLUGINS = {dist: f"python3-{dist}" for dist in (
    "pytest-cov", "pytest-timeout", "pytest-xdist", "pytest-rerunfailures", "pytest-benchmark",
    "pytest-asyncio")}
"""The plugins the distribution packages (``sudo apt-get install python3-<name>``)."""

_PUNCTUATION = ";&|(){}!"
_LEADING = {"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "time", "esac"}
"""Words before a command (skipped to reach it)."""
_KEYWORDS = {"for", "in", "case", "function", "select", "[[", "]]", "coproc"}
"""Words that start a clause, not a command (a command beginning with one is left out)."""
_HEREDOC = re.compile(r"(<<-?\s*(['\"]?)(\w+)\2[^\n]*\n)(?:.*?\n)*?\s*\3\s*(?:\n|$)", re.S)
"""A here-document: its body is data, not commands (the line that opens it stays)."""
_BUILTINS = {
    ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command",
    "compgen", "complete", "continue", "declare", "dirs", "disown", "echo", "enable", "eval",
    "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs",
    "kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read",
    "readarray", "readonly", "return", "set", "shift", "shopt", "source", "suspend", "test",
    "times", "trap", "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait",
}
_PREFIXES = {"sudo", "env", "nohup", "timeout", "xargs", "exec", "command", "nice", "stdbuf"}
"""Commands that run the next word as a command (their own options are skipped)."""
_INSTALLERS = {"pip", "pip3", "uv", "uvx", "apt-get", "apt", "curl", "wget", "conda", "npm"}
_AUTOLOAD_SETTINGS = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")
_SHELLS = {"sh", "bash", "dash", "ksh", "zsh", "ash"}
_COMMAND_NAME = re.compile(r"[A-Za-z0-9_/][A-Za-z0-9_./+-]*")
"""What a command's name looks like (anything else is not read as one)."""
_REDIRECTION = re.compile(r"\d*(>>?|<<?|>&|<&)(\d*|-)?")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_OWN_PATHS = ("/app", "/tests", "/logs", "/solution", "/oracle", "/tmp", "./", "../")
"""Paths of the task's or the agent's own files: the script brings them, nothing to check."""


@dataclass
class ScriptNeeds:
    """What :func:`script_needs` found."""

    programs: list[str] = field(default_factory=list)
    plugins: dict[str, str] = field(default_factory=dict)
    """Plugin module → the distribution to install (``""`` when only ``-p`` names it)."""
    installs: bool = False
    """Whether the script installs anything as it runs (then what it installs is not checked)."""
    unloaded: dict[str, str] = field(default_factory=dict)
    """Plugin module → the flag a pytest run asks for it by, with no ``-p MODULE`` loading it
    (every pytest run, those after an install included). taskgym's grader turns plugin
    autoloading off (``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``, so that no plugin planted in
    ``/app`` loads), so such a flag is an error for pytest, installed plugin or not; a script
    that names ``PYTEST_ADDOPTS``, ``PYTEST_PLUGINS`` or the autoload variable is left alone."""

    def requirements(self) -> tuple[Requirement, ...]:
        """The requirements preflight checks: one for the commands, one per plugin."""
        found: list[Requirement] = []
        if self.programs:
            found.append(Requirement("tests/test.sh: the commands it runs",
                                     programs=tuple(self.programs), in_env_image=False))
        for module, dist in self.plugins.items():
            found.append(Requirement(
                f"tests/test.sh: the pytest plugin {dist or module}", programs=("python3",),
                modules=(module,), in_env_image=False, packages=DEBIAN_PLUGINS.get(dist, ""),
                distribution=dist,
                fix=f"/usr/bin/python3 -m pip install {dist or module} (the test script's "
                    "python3 is the system's)"))
        return tuple(found)


def script_needs(text: str) -> ScriptNeeds:
    """The commands ``text`` (a shell script) runs and the pytest plugins it asks for; a
    script of another language (its ``#!`` line names no shell) needs its interpreter only."""
    needs = ScriptNeeds()
    interpreter = _interpreter(text)
    if interpreter is not None and interpreter.rsplit("/", 1)[-1] not in _SHELLS:
        needs.programs.append(interpreter)
        return needs
    commands = list(_commands(text.replace("\\\n", " ")))
    if not any(name in text for name in _AUTOLOAD_SETTINGS):
        for words in commands:
            asked = _plugins(_pytest_args(words) or [])
            loaded = {module for module, _, flag in asked if flag is None}
            needs.unloaded.update((module, flag) for module, _, flag in asked
                                  if flag is not None and module not in loaded)
    defined = {words[0][:-2] for words in commands if words[0].endswith("()")}
    defined |= {words[1] for words in commands if len(words) > 1 and words[0] == "function"}
    for words in commands:
        name = words[0]
        if (name in _BUILTINS or name in _KEYWORDS or name in defined
                or not _COMMAND_NAME.fullmatch(name) or name.startswith(_OWN_PATHS)
                or ("/" in name and not name.startswith("/"))):
            continue
        if name not in needs.programs:
            needs.programs.append(name)
        if name in _INSTALLERS or words[1:3] == ["-m", "pip"]:  # next may be what it installs
            needs.installs = True
            break
        pytest_args = _pytest_args(words)
        if pytest_args is not None:
            for module, dist, _ in _plugins(pytest_args):
                needs.plugins.setdefault(module, dist)
    return needs


def refuse_unloaded_plugins(task: Task, script: Path, found: ScriptNeeds) -> None:
    """Raise :class:`ConfigError` when ``script`` asks pytest for a plugin by its flag alone
    (:attr:`ScriptNeeds.unloaded`), unless a ``conftest.py`` or ``pytest.ini`` of the task's
    tests names the plugin's module (``pytest_plugins``, ``-p``)."""
    configs = [p.read_text(errors="replace") for name in ("conftest.py", "pytest.ini")
               for p in task.path.glob(f"**/tests/{name}")]
    for module, flag in found.unloaded.items():
        if any(module in text for text in configs):
            continue
        raise ConfigError(
            f"{script} runs pytest {flag} with no -p {module}: taskgym's grader turns pytest's "
            "plugin autoloading off (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1, so that no plugin "
            "planted in /app loads), so pytest refuses the flag and every grade would fail; "
            f"load the plugin by name in the script: pytest -p {module} {flag} ...")


def _interpreter(text: str) -> str | None:
    """The program the ``#!`` line names (``/usr/bin/env X``: ``X``), else ``None``."""
    if not text.startswith("#!"):
        return None
    words = text[2:].split("\n", 1)[0].split()
    if not words:
        return None
    if words[0].rsplit("/", 1)[-1] == "env":
        rest = [w for w in words[1:] if not w.startswith("-")]
        return rest[0] if rest else None
    return words[0]


def cached_script_needs(path: Path) -> ScriptNeeds:
    """:func:`script_needs` of the file ``path``, read again only when it changes."""
    try:
        stat = path.stat()
    except OSError:
        return ScriptNeeds()
    return _needs_of(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=1024)
def _needs_of(path: str, mtime_ns: int, size: int) -> ScriptNeeds:
    return script_needs(Path(path).read_text(errors="replace"))


def _commands(text: str) -> list[list[str]]:
    """Each simple command's words, command substitutions read as commands of their own."""
    text = _HEREDOC.sub(_drop_heredoc_body, text)
    text = re.sub(r"\$\(\((.*?)\)\)|^\s*\(\((.*?)\)\)", "0", text, flags=re.M)  # arithmetic
    lexer = shlex.shlex(text, posix=True, punctuation_chars=_PUNCTUATION)
    lexer.whitespace = " \t\r"
    lexer.wordchars += ":@%+,^[]<>$"
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: read what came before it
        tokens = []
    found: list[list[str]] = []
    words: list[str] = []
    cases = 0
    redirect_target = False
    for i, token in enumerate([*tokens, ";"]):
        for inner in re.findall(r"\$\(([^()]*)\)|`([^`]*)`", token):
            found += _commands(inner[0] or inner[1])
        if token == "\n" or set(token) <= set(_PUNCTUATION):
            if len(words) == 1 and (token == "()" or (token == "(" and
                                                      tokens[i + 1:i + 2] == [")"])):
                found.append([f"{words[0]}()"])  # name() { ...: a function of the script's
                words = []
            elif token == ")" and cases and words:
                words = []  # a case pattern
            if words:
                found.append(words)
            words = []
            continue
        if not words and token in _LEADING:
            cases -= token == "esac"
            continue
        if not words and _ASSIGNMENT.match(token):
            continue
        if redirect_target:
            redirect_target = False
            continue
        if not words and _REDIRECTION.match(token):  # "> file" before the command's name
            redirect_target = _REDIRECTION.fullmatch(token) is not None
            continue
        if words and words[0] in _PREFIXES:
            if token.startswith("-") or _ASSIGNMENT.match(token) or (
                    words[0] == "timeout" and token[:1].isdigit()):
                continue
            words = []
        cases += not words and token == "case"
        words.append(token)
    return [w for w in found if w]


def _drop_heredoc_body(match: re.Match[str]) -> str:
    return match.group(1)


def _pytest_args(words: list[str]) -> list[str] | None:
    """The arguments of a pytest run (``pytest``, ``py.test``, ``python3 -m pytest``), else
    ``None``."""
    name = words[0].rsplit("/", 1)[-1]
    if name in ("pytest", "py.test", "pytest-3"):
        return words[1:]
    if name in ("uv", "uvx") and "pytest" in words:  # uvx [options] pytest ..., uv run pytest
        return words[words.index("pytest") + 1:]
    if re.fullmatch(r"python(3(\.\d+)?)?", name):
        for i, word in enumerate(words[1:-1], 1):
            if word == "-m" and words[i + 1] == "pytest":
                return words[i + 2:]
    return None


def _plugins(args: list[str]) -> list[tuple[str, str, str | None]]:
    """(module, distribution, the flag that asks for it or ``None`` for ``-p``) of each plugin
    the pytest arguments ask for."""
    found: list[tuple[str, str, str | None]] = []
    for i, arg in enumerate(args):
        flag = arg.split("=", 1)[0]
        if flag in PLUGIN_FLAGS:
            dist, module = PLUGIN_FLAGS[flag]
            found.append((module, dist, flag))
        elif flag.startswith("--benchmark-"):
            found.append(("pytest_benchmark", "pytest-benchmark", flag))
        elif arg == "-p" and i + 1 < len(args) and not args[i + 1].startswith("no:"):
            found.append((args[i + 1], _DISTRIBUTIONS.get(args[i + 1], ""), None))
        elif arg.startswith("-p") and len(arg) > 2 and not arg[2:].startswith("no:"):
            found.append((arg[2:], _DISTRIBUTIONS.get(arg[2:], ""), None))
    return found
