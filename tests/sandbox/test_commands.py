"""How a command reaches the persistent shell: the three trigger forms, and that the plain
form (no ``eval``) can never be a syntax error, which would end the shell."""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskgym.sandbox import Backend, SandboxSpec
from taskgym.sandbox.shell.commands import SOURCE_TRIGGER, CommandFile


@pytest.fixture()
def commands(tmp_path: Path) -> Iterator[CommandFile]:
    fd = os.open(tmp_path / "cmd", os.O_RDWR | os.O_CREAT, 0o644)
    yield CommandFile(fd)
    os.close(fd)


@pytest.mark.parametrize("command", ["echo hi", "ls -la /app", "python3 -m pytest -q tests/",
                                     "a=1", "x=1 y=2 env", "-x", "%1", ".", "make -j2 CC=gcc"])
def test_plain_commands_ride_the_trigger_as_they_are(commands: CommandFile, command: str) -> None:
    assert commands.trigger(command, 7) == command.encode() + b" 251>&-;__ts 7\n"


@pytest.mark.parametrize("command", ["echo 'hi'", "echo $HOME", "ls | wc -l", "if true",
                                     "echo done", "for x in a", "cat ~/x", "echo a#b", "ls *.py",
                                     "", "   ", "echo\thi"])
def test_other_one_liners_are_quoted_for_eval(commands: CommandFile, command: str) -> None:
    trigger = commands.trigger(command, 7)
    if command.isprintable():
        assert trigger.startswith(b"eval $'") and trigger.endswith(b"' 251>&-;__ts 7\n")
    else:  # a tab is not printable: the command file
        assert trigger == SOURCE_TRIGGER + b" 251>&-;__ts 7\n"


@pytest.mark.parametrize("command", ["echo " + "x" * 100, "echo héllo", "return 3", "a\nb"])
def test_long_or_special_commands_go_through_the_file(tmp_path: Path, commands: CommandFile,
                                                       command: str) -> None:
    assert commands.trigger(command, 7) == SOURCE_TRIGGER + b" 251>&-;__ts 7\n"
    assert (tmp_path / "cmd").read_bytes() == command.encode()


def test_no_plain_trigger_is_a_syntax_error(tmp_path: Path, commands: CommandFile) -> None:
    rng = random.Random(7)
    alphabet = "abcxyz019 -_./=:,+%@" + " " * 6
    words = ["if", "then", "fi", "done", "in", "time", "echo", "a=1", "-x", "+", "%1", ".", ":",
             "=", "@", ",", "a+=1", "ls", "{", "}", "!", "[["]
    plain = []
    for i in range(600):
        if i % 2:
            command = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24)))
        else:
            command = " ".join(rng.choice(words) for _ in range(rng.randint(1, 4)))
        trigger = commands.trigger(command, 7)
        if not trigger.startswith((b"eval ", b". ")):
            plain.append(trigger)
    assert len(plain) > 200
    script = tmp_path / "plain.sh"
    script.write_bytes(b"__ts() { :; }\n" + b"".join(plain))
    checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_plain_commands_run_at_the_prompt_and_keep_the_shell(backend: Backend) -> None:
    with backend.start(SandboxSpec()) as session:
        cases = {"a=7": 0, "-x": 127, "%1": 1, ".": 2, ": x y": 0, "false": 1, "exit_not_here": 127}
        for command, status in cases.items():
            result = session.exec(command, timeout=10)
            assert (result.exit_code, result.restarted) == (status, False), (command, result)
        assert session.exec("echo $a", timeout=10).stdout == "7\n"

