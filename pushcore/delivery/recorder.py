"""Gateway answers stored in groups, each group started within a short window of its
first answer, whether or not the group before it has committed.

API.md ("Limits and fairness"): an answer is recorded within 100 ms, so that a crash
repeats only the last ~100 ms of sends. A :class:`~pushcore.delivery.coalesce.Coalescer`
starts the next group only once the previous one is stored: an answer could wait for
the previous group's whole transaction (and its wait for the database) before its own
began. Here a group starts at once when none is being stored (with the answers of
the same turn of the event loop: batches that finish together), else within
``window`` of its first answer, or at once when ``size`` answers are waiting, up to
``parallel`` groups at a time. On SQLite the
groups still take the one writer in turn (an urgent turn, before claims); they then
wait for one transaction at most, not for a hop through the event loop as well. On
PostgreSQL they write their own rows side by side (the account counters, updated in
id order by every writer, keep their commits in line).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

from pushcore.delivery.coalesce import flush_group

Item = TypeVar("Item")
Result = TypeVar("Result")

# A group of answers starts at most this long after its first answer came.
WINDOW = 0.02
# ... or at once when this many are waiting (a claim's batch is up to 256).
SIZE = 256
# Groups stored at once (and so the threads the engine records on).
PARALLEL = 4


class GroupRecorder(Generic[Item, Result]):
    """Runs ``flush`` on the items submitted, in groups bounded in time and size."""

    def __init__(
        self,
        flush: Callable[[list[Item]], Awaitable[Result]],
        window: float = WINDOW,
        size: int = SIZE,
        parallel: int = PARALLEL,
    ) -> None:
        self._flush = flush
        self._window = window
        self._size = size
        self._parallel = parallel
        self._queued: list[tuple[Sequence[Item], asyncio.Future[Result]]] = []
        self._waiting = 0  # items queued
        self._running: set[asyncio.Task[None]] = set()
        self._timer: asyncio.Handle | None = None

    async def submit(self, items: Sequence[Item]) -> Result:
        """Queue ``items``; the result of the flush that stores them (or its exception)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        self._queued.append((items, future))
        self._waiting += len(items)
        if self._waiting >= self._size:
            self._start()  # a full group
        elif self._timer is None:
            # Nothing being stored: at once, with the answers of this same turn of the
            # loop (batches that finish together); else within the window.
            if self._running:
                self._timer = loop.call_later(self._window, self._due)
            else:
                self._timer = loop.call_soon(self._due)
        return await future

    def _due(self) -> None:
        self._timer = None
        self._start()

    def _start(self) -> None:
        """Start a group of what is queued, unless ``parallel`` groups are being stored
        (the first of them to end starts it then)."""
        if not self._queued or len(self._running) >= self._parallel:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        group, self._queued, self._waiting = self._queued, [], 0
        task = asyncio.get_running_loop().create_task(self._store(group))
        self._running.add(task)
        task.add_done_callback(self._stored)

    def _stored(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        if self._queued and (not self._running or self._timer is None):
            # Queued while every slot was busy (its window passed), or nothing else is
            # being stored now: go at once.
            self._start()

    async def _store(self, group: list[tuple[Sequence[Item], asyncio.Future[Result]]]) -> None:
        await flush_group(self._flush, group)
