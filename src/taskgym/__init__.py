"""taskgym: task-sandbox environments for reinforcement learning of LLM agents.

```python
import taskgym
env = taskgym.make("coding-terminal-v0")
obs, info = env.reset(seed=0)
obs, reward, terminated, truncated, info = env.step({"tool": "bash", "args": {"command": "ls"}})
```
"""

from taskgym import rollouts
from taskgym.checks import check_task_env
from taskgym.core import shared_memory as _shared_memory  # noqa: F401  (registers UnicodeText's)
from taskgym.core.env import TaskEnv
from taskgym.core.registry import list_envs, make, make_vec, register
from taskgym.core.reward import FailureClass, RewardResult, Verdict
from taskgym.core.spaces import ToolCallSpace, UnicodeText
from taskgym.core.task import FolderTaskSet, GeneratedTaskSet, Limits, Task, TaskSet, load_task
from taskgym.core.tool import Tool, ToolResult, parse_action
from taskgym.episodes import run_episode
from taskgym.errors import (
    ConfigError,
    GraderDependencyError,
    HostResourceError,
    MissingDependencyError,
    NoVerdictError,
    SandboxError,
    SandboxLostError,
    SandboxUnavailableError,
    TaskgymError,
    TaskNotFoundError,
    UnknownEnvError,
    VerifierError,
)
from taskgym.evaluation import EpisodeRecord, EvalResults, evaluate
from taskgym.integrations.tool_calls import parse_tool_calls

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "EpisodeRecord",
    "EvalResults",
    "FailureClass",
    "FolderTaskSet",
    "GeneratedTaskSet",
    "GraderDependencyError",
    "HostResourceError",
    "Limits",
    "MissingDependencyError",
    "NoVerdictError",
    "RewardResult",
    "SandboxError",
    "SandboxLostError",
    "SandboxUnavailableError",
    "Task",
    "TaskEnv",
    "TaskNotFoundError",
    "TaskSet",
    "TaskgymError",
    "Tool",
    "ToolCallSpace",
    "ToolResult",
    "UnicodeText",
    "UnknownEnvError",
    "Verdict",
    "VerifierError",
    "__version__",
    "check_task_env",
    "evaluate",
    "list_envs",
    "load_task",
    "make",
    "make_vec",
    "parse_action",
    "parse_tool_calls",
    "register",
    "rollouts",
    "run_episode",
]
