"""The warm pool: started containers with their shell open, kept ready per container shape."""

from __future__ import annotations

import queue
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from taskgym.sandbox.docker.container import Container, Shape, Shell

if TYPE_CHECKING:
    from taskgym.sandbox.docker.backend import DockerBackend

__all__ = ["Pool"]

_POOLED_SHAPES = 4


class Pool:
    """Started containers with their shell open, per shape; refilled in the background.

    Up to ``size`` containers for each of the :data:`_POOLED_SHAPES` most recently started
    shapes (a task set whose tasks differ in limits has several); an older shape's
    containers are closed when a new one comes in.
    """

    def __init__(self, backend: DockerBackend, size: int) -> None:
        self.backend = backend
        self.size = size
        self.ready: OrderedDict[Shape, list[tuple[Container, Shell]]] = OrderedDict()
        self.lock = threading.Lock()
        self.wanted: queue.Queue[Shape | None] = queue.Queue()
        self.worker: threading.Thread | None = None
        self.closed = False

    def take(self, shape: Shape) -> tuple[Container, Shell] | None:
        evicted: list[tuple[Container, Shell]] = []
        with self.lock:
            items = self.ready.setdefault(shape, [])
            self.ready.move_to_end(shape)
            item = items.pop() if items else None
            while len(self.ready) > _POOLED_SHAPES:
                evicted += self.ready.popitem(last=False)[1]
        _close_items(evicted)
        if self.size > 0 and not self.closed:
            self.wanted.put(shape)
            if self.worker is None:
                self.worker = threading.Thread(target=self._fill, daemon=True,
                                               name="taskgym-docker-pool")
                self.worker.start()
        return item

    def _fill(self) -> None:
        while (shape := self.wanted.get()) is not None:
            while not self.closed:
                with self.lock:
                    if shape not in self.ready or len(self.ready[shape]) >= self.size:
                        break  # evicted meanwhile, or full
                try:
                    item = self.backend.prepare(shape)
                except Exception:
                    break
                with self.lock:
                    keep = not self.closed and shape in self.ready
                    if keep:
                        self.ready[shape].append(item)
                if not keep:
                    _close_items([item])
                    break

    def drain(self) -> None:
        self.closed = True
        self.wanted.put(None)
        with self.lock:
            items = [item for items in self.ready.values() for item in items]
            self.ready.clear()
        _close_items(items)
        if self.worker is not None:
            self.worker.join(timeout=30)


def _close_items(items: list[tuple[Container, Shell]]) -> None:
    for container, shell in items:
        shell.close()
        container.close()
