"""OpenEnv's task-listing routes of taskgym serve, and a reset by a listed task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import ClientConnection

pytestmark = [pytest.mark.sandbox]



def send(ws: ClientConnection, message: dict[str, Any]) -> dict[str, Any]:
    ws.send(json.dumps(message))
    answer: dict[str, Any] = json.loads(ws.recv(timeout=120))
    return answer


def test_task_listing_and_a_reset_by_a_listed_task(serve: Any, answer_tasks: str,
                                                   answer_task: Any) -> None:
    answer_task(Path(answer_tasks) / "bigger", solve="echo 43 > /app/answer.txt\n")
    served = serve()
    base = f"{served.url}/coding-terminal-v0"
    assert served.http(f"{served.url}/list_environments") == (200, ["coding-terminal-v0"])
    assert served.http(f"{base}/splits") == (200, [{"name": "all", "type": "train"}])
    status, listed = served.http(f"{base}/tasks", {"split": "all"})
    assert status == 200 and listed["env_name"] == "coding-terminal-v0"
    assert [t["task_id"] for t in listed["tasks"]] == ["answer", "bigger"]
    assert [t["index"] for t in listed["tasks"]] == [t["seed"] for t in listed["tasks"]] == [0, 1]
    assert served.http(f"{base}/num_tasks", {"split": "all"}) == (200, {"num_tasks": 2})
    status, one = served.http(f"{base}/task", {"split": "all", "index": 1})
    assert status == 200 and one["task"]["task_id"] == "bigger"
    assert one["task"]["instruction"] == "Write 42 to /app/answer.txt.\n"
    assert served.http(f"{base}/task_range", {"split": "all", "start": 1})[1]["tasks"] == listed["tasks"][1:]
    assert served.http(f"{base}/task_range", {"split": "all", "stop": -1})[1]["tasks"] == listed["tasks"][:1]
    # refusals
    assert served.http(f"{served.url}/other-v0/num_tasks", {})[0] == 404
    assert served.http(f"{base}/num_tasks", {"split": "train"})[0] == 404
    assert served.http(f"{base}/task", {"index": 2})[0] == 400
    assert served.http(f"{base}/task", {"index": "0"})[0] == 400
    assert served.http(f"{base}/task", b"{nope")[0] == 400
    assert served.http(f"{base}/task_range", {"start": "a"})[0] == 400
    # a listed task's seed and task_id reset to it
    with served.ws() as ws:
        for how in ({"seed": 1}, {"task_id": "bigger"}):
            send(ws, {"type": "reset", "data": how})
            assert send(ws, {"type": "state"})["data"]["task_id"] == "bigger"
