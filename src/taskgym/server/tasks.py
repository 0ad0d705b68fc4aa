"""OpenEnv's task-listing routes (its ORS-compatible Task API) over the served env's task set.

taskgym has no splits: the served task set is one split, ``all`` (type ``train``). A task
spec is ``{"index", "task_id", "seed"}``, what a ``reset`` takes (``{"task_id": ...}``, or
``{"seed": index}``, which picks the same task); ``POST /{env}/task`` adds the task's
instruction, difficulty, category and tags. Listing reads ids only, never task folders. The
same routes serve the Open Reward Standard's client (:mod:`taskgym.server.ors`), which reads
``env_name`` from every answer and creates a session on a listed spec.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from taskgym.core.task import TaskSet

SPLIT = "all"


def detail(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """An error answer in the shape OpenEnv's and ORS's (FastAPI) servers give:
    ``{"detail": message}``."""
    return JSONResponse({"detail": message}, status_code=status, headers=headers)


async def json_object(request: Request, status: int) -> dict[str, Any] | Response:
    """The request's body as a JSON object (an empty body is ``{}``), else a ``status`` error."""
    try:
        body = json.loads(await request.body() or b"{}")
    except (json.JSONDecodeError, UnicodeDecodeError):
        body = None
    return body if isinstance(body, dict) else detail(status, "the body is a JSON object")


def task_routes(env_id: str, task_set: TaskSet) -> list[Route]:
    """The routes: ``GET /list_environments``, ``GET /{env}/splits``, ``POST /{env}/tasks``,
    ``/num_tasks``, ``/task``, ``/task_range`` (bodies as OpenEnv's: ``split``, ``index``,
    ``start``, ``stop``)."""

    def specs(start: int, stop: int) -> list[dict[str, Any]]:
        ids = task_set.ids()
        return [{"index": i, "task_id": ids[i], "seed": i} for i in range(len(ids))[start:stop]]

    async def body_of(request: Request) -> dict[str, Any] | Response:
        """The request's JSON body when its env and split are the served ones, else the
        error response."""
        if request.path_params["env"].lower() != env_id.lower():
            return detail(404, f"unknown environment {request.path_params['env']!r}; "
                          f"this server serves {env_id}")
        body = await json_object(request, 400)
        if isinstance(body, Response):
            return body
        if body.get("split", SPLIT) != SPLIT:
            return detail(404, f"unknown split {str(body.get('split'))[:100]!r}; "
                          f"this server's one split is {SPLIT!r}")
        return body

    async def environments(request: Request) -> Response:
        return JSONResponse([env_id])

    async def splits(request: Request) -> Response:
        if request.path_params["env"].lower() != env_id.lower():
            return detail(404, f"unknown environment; this server serves {env_id}")
        return JSONResponse([{"name": SPLIT, "type": "train"}])

    async def tasks(request: Request) -> Response:
        body = await body_of(request)
        if isinstance(body, Response):
            return body
        return JSONResponse({"tasks": await asyncio.to_thread(specs, 0, len(task_set)),
                             "env_name": env_id})

    async def num_tasks(request: Request) -> Response:
        body = await body_of(request)
        if isinstance(body, Response):
            return body
        return JSONResponse({"num_tasks": len(task_set)})

    async def task(request: Request) -> Response:
        body = await body_of(request)
        if isinstance(body, Response):
            return body
        index = body.get("index")
        if type(index) is not int or not 0 <= index < len(task_set):
            return detail(400, f"Invalid task index: give 'index', 0 to {len(task_set) - 1}")

        def one() -> dict[str, Any]:
            found = task_set.pick(index)
            return {"index": index, "task_id": found.id, "seed": index,
                    "instruction": found.instruction, "difficulty": found.difficulty,
                    "category": found.category, "tags": list(found.tags)}

        return JSONResponse({"task": await asyncio.to_thread(one), "env_name": env_id})

    async def task_range(request: Request) -> Response:
        body = await body_of(request)
        if isinstance(body, Response):
            return body
        start, stop = body.get("start"), body.get("stop")
        if any(v is not None and type(v) is not int for v in (start, stop)):
            return detail(400, "start and stop are integers (or null), as in a Python slice")
        bounds = slice(start, stop).indices(len(task_set))
        return JSONResponse({"tasks": await asyncio.to_thread(specs, bounds[0], bounds[1]),
                             "env_name": env_id})

    return [Route("/list_environments", environments),
            Route("/{env}/splits", splits),
            Route("/{env}/tasks", tasks, methods=["POST"]),
            Route("/{env}/num_tasks", num_tasks, methods=["POST"]),
            Route("/{env}/task", task, methods=["POST"]),
            Route("/{env}/task_range", task_range, methods=["POST"])]
