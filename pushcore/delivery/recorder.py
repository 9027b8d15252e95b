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

Back-pressure: at overload the engine's loop, its claims and its roll-ups share one
interpreter (and a busy machine's CPUs) with the groups being stored, and an answer
waited for all of them. :meth:`GroupRecorder.caught_up` is what the engine waits for
before it claims (and so sends) more: no answer stored or waiting for longer than
``BEHIND``, and no more waiting than one group takes. So the engine sends what it can
record in time rather than more than it can.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Generic, TypeVar

from pushcore.delivery.coalesce import settle_group

Item = TypeVar("Item")
Result = TypeVar("Result")

# A group of answers starts at most this long after its first answer came.
WINDOW = 0.02
# ... or at once when this many are waiting (a claim's batch is up to 256).
SIZE = 256
# Groups stored at once (and so the threads the engine records on).
PARALLEL = 4
# Answers unrecorded for longer than this hold the engine's next claim (caught_up):
# half of API.md's 100 ms, the other half for the group under way to commit.
BEHIND = 0.05


class GroupRecorder(Generic[Item, Result]):
    """Runs ``flush`` on the items submitted, in groups bounded in time and size."""

    def __init__(
        self,
        flush: Callable[[list[Item]], Awaitable[Result]],
        window: float = WINDOW,
        size: int = SIZE,
        parallel: int = PARALLEL,
        behind: float = BEHIND,
    ) -> None:
        self._flush = flush
        self._window = window
        self._size = size
        self._parallel = parallel
        self._behind = behind
        self._queued: list[tuple[Sequence[Item], asyncio.Future[Result]]] = []
        self._waiting = 0  # items queued
        self._queued_at: float | None = None  # when the oldest of them came (loop time)
        # The groups being stored: when the oldest item of each came, and its size.
        self._running: dict[asyncio.Task[None], tuple[float, int]] = {}
        self._timer: asyncio.Handle | None = None
        self._progress: asyncio.Future[None] | None = None  # resolved as a group ends

    async def submit(self, items: Sequence[Item]) -> Result:
        """Queue ``items``; the result of the flush that stores them (or its exception)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        self._queued.append((items, future))
        self._waiting += len(items)
        if self._queued_at is None:
            self._queued_at = loop.time()
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
        loop = asyncio.get_running_loop()
        since = loop.time() if self._queued_at is None else self._queued_at
        size = self._waiting
        group, self._queued, self._waiting, self._queued_at = self._queued, [], 0, None
        # Called here, not in the task: a flush that hands its work to a thread when
        # called (the engine's) starts it now, not a turn of a busy loop later.
        items = [item for items, _ in group for item in items]
        try:
            started = self._flush(items)
        except Exception as exc:
            started = failed(loop, exc)
        task = loop.create_task(settle_group(started, group))
        self._running[task] = (since, size)
        task.add_done_callback(self._stored)

    def behind(self) -> bool:
        """Whether an item has waited (queued or being stored) for longer than ``behind``
        seconds, or more are waiting than one group takes."""
        pending = [*self._running.values()]
        if self._queued_at is not None:
            pending.append((self._queued_at, self._waiting))
        if not pending:
            return False
        oldest = min(since for since, _ in pending)
        backlog = sum(size for _, size in pending)
        return backlog > self._size or asyncio.get_running_loop().time() - oldest > self._behind

    async def caught_up(self, timeout: float) -> bool:
        """Wait until not :meth:`behind` (only a stored group can end that), for at most
        ``timeout`` seconds: a group stuck on the database must not stop the engine.
        Whether it caught up."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.behind():
            left = deadline - loop.time()
            if left <= 0:
                return False
            if self._progress is None or self._progress.done():
                self._progress = loop.create_future()
            try:
                async with asyncio.timeout(left):
                    await asyncio.shield(self._progress)
            except TimeoutError:
                return not self.behind()
        return True

    def _stored(self, task: asyncio.Task[None]) -> None:
        self._running.pop(task, None)
        if self._progress is not None and not self._progress.done():
            self._progress.set_result(None)
        if self._queued and (not self._running or self._timer is None):
            # Queued while every slot was busy (its window passed), or nothing else is
            # being stored now: go at once.
            self._start()


def failed(loop: asyncio.AbstractEventLoop, exc: Exception) -> asyncio.Future[Any]:
    """A future already failed with ``exc``."""
    future: asyncio.Future[Any] = loop.create_future()
    future.set_exception(exc)
    return future
