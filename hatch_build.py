"""Build hook: compile the optional C helper ``taskgym/sandbox/host/_syscalls.c``.

The helper makes the few system calls of a sandbox step without releasing the GIL, at
about a quarter of what the ``ctypes`` fallback costs (see ``taskgym/sandbox/host/gil_held.py``).
Without a C compiler the build goes on, pure Python, and says so: taskgym then uses the
fallback and is only slower with many threads.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("src/taskgym/sandbox/host/_syscalls.c")


def _compiler() -> list[str] | None:
    configured = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "")
    for argv in (configured, ["cc"], ["gcc"]):
        if argv and shutil.which(argv[0]):
            return argv
    return None


class CustomBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        source = root / SOURCE
        target = source.with_name("_syscalls" + sysconfig.get_config_var("EXT_SUFFIX"))
        compiler = _compiler()
        if compiler is None:
            self._skip("no C compiler found (install gcc)")
            return
        argv = [*compiler, "-O2", "-shared", "-fPIC", "-Wall",
                f"-I{sysconfig.get_paths()['include']}", str(source), "-o", str(target)]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            self._skip(f"{shlex.join(argv)} failed:\n{done.stderr.strip()}")
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        if version != "editable":  # an editable install imports it from src/ directly
            build_data["force_include"][str(target)] = str(target.relative_to(root / "src"))

    def _skip(self, why: str) -> None:
        print(f"taskgym: the C helper was not built ({why}); the pure-Python fallback "
              "is used, slower when many threads step sandboxes", file=sys.stderr)
