"""The kit for domain authors: everything a domain needs from taskgym, in one namespace.

A domain is an env class, a verifier and (when grading runs code) an in-sandbox grading script;
docs/add-a-domain.md builds one from an empty folder with this kit alone. Every name here is
documented there, and a test holds ``__all__`` to that.
"""

from taskgym.core.env import TaskEnv
from taskgym.core.env_needs import Check, program_check
from taskgym.core.preflight import Requirement
from taskgym.core.reward import RewardResult, submitted_file
from taskgym.core.sandboxed_grader import GraderResult, grader_outcome, grader_secret, grader_spec
from taskgym.core.settings import TaskSettings, VerifierSettings
from taskgym.core.task import Limits, Task
from taskgym.core.task_folder import task_toml, write_task_folder
from taskgym.core.tool import SubmitArgs, Tool, ToolArgs, ToolResult
from taskgym.domain.grade_script import GRADER_MOUNT, grade_with_script
from taskgym.errors import ConfigError, TaskgymError
from taskgym.sandbox import SandboxSpec, Session
from taskgym.sandbox.grading import Grader, GraderRun, run_grader
from taskgym.tools.shell import python_tool, shell_tools
from taskgym.tools.worker_env import WorkerEnv, WorkerSettings

__all__ = [
    "GRADER_MOUNT",
    "Check",
    "ConfigError",
    "Grader",
    "GraderResult",
    "GraderRun",
    "Limits",
    "Requirement",
    "RewardResult",
    "SandboxSpec",
    "Session",
    "SubmitArgs",
    "Task",
    "TaskEnv",
    "TaskSettings",
    "TaskgymError",
    "Tool",
    "ToolArgs",
    "ToolResult",
    "VerifierSettings",
    "WorkerEnv",
    "WorkerSettings",
    "grade_with_script",
    "grader_outcome",
    "grader_secret",
    "grader_spec",
    "program_check",
    "python_tool",
    "run_grader",
    "shell_tools",
    "submitted_file",
    "task_toml",
    "write_task_folder",
]
