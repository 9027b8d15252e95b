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

Back-pressure, only under overload: at 5,000 deliveries a second asked on PostgreSQL
the engine's loop, its claims and its roll-ups share one interpreter (and the CPUs)
with the groups being stored, and answers waited for all of them. While the oldest
answer not yet stored has waited longer than ``BEHIND`` (:meth:`GroupRecorder.behind`),
the engine's next claim after a full one (more overdue than a claim takes: an
overload) waits for a group to end (:meth:`GroupRecorder.caught_up`), and so its
sends. Age alone decides: a first try (reverted in 14ff6a2) held every claim, also
while more than one group's worth waited, and after 50 ms; that engaged at 1,000/s,
where records keep up, and lengthened the tail there (a held claim sends what fell
due meanwhile in a burst, and a burst's answers make one long transaction). Roll-ups
are not held: held, they grow, and on SQLite a long roll-up keeps the one writer
from the records (docs/benchmarks.md, "Crash repeats").
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
# The back-pressure engages once an answer has waited this long unstored: at 1,000/s
# on PostgreSQL (quiet) the oldest repeat's median is 6 ms, so only an overload gets
# here; the rest of API.md's 100 ms is for the group under way to commit.
BEHIND = 0.065


class GroupRecorder(Generic[Item, Result]):
    """Runs ``flush`` on the items submitted, in groups bounded in time and size."""

    def __init__(
        self,
        flush: Callable[[list[Item]], Awaitable[Result]],
        window: float = WINDOW,
        size: int = SIZE,
        parallel: int = PARALLEL,
        behind: float = BEHIND,
        now: Callable[[], float] | None = None,
    ) -> None:
        self._flush = flush
        self._window = window
        self._size = size
        self._parallel = parallel
        self._behind = behind
        self._now = now  # None: the running loop's time (tests pass their own)
        self._queued: list[tuple[Sequence[Item], asyncio.Future[Result]]] = []
        self._waiting = 0  # items queued
        self._queued_at: float | None = None  # when the oldest of them came
        # The groups being stored, each with when its oldest item came.
        self._running: dict[asyncio.Task[None], float] = {}
        self._timer: asyncio.Handle | None = None
        self._progress: asyncio.Future[None] | None = None  # resolved as a group ends
        # How many waits for the records began (claims held): a test shows that
        # nothing waits at a normal pace.
        self.holds = 0

    def _time(self) -> float:
        return self._now() if self._now is not None else asyncio.get_running_loop().time()

    async def submit(self, items: Sequence[Item]) -> Result:
        """Queue ``items``; the result of the flush that stores them (or its exception)."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Result] = loop.create_future()
        self._queued.append((items, future))
        self._waiting += len(items)
        if self._queued_at is None:
            self._queued_at = self._time()
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
        since = self._time() if self._queued_at is None else self._queued_at
        group, self._queued, self._waiting, self._queued_at = self._queued, [], 0, None
        task = asyncio.get_running_loop().create_task(self._store(group))
        self._running[task] = since
        task.add_done_callback(self._stored)

    def behind(self) -> bool:
        """Whether an item queued or being stored has waited longer than ``behind``."""
        oldest = min(self._running.values(), default=None)
        if self._queued_at is not None and (oldest is None or self._queued_at < oldest):
            oldest = self._queued_at
        return oldest is not None and self._time() - oldest > self._behind

    async def caught_up(self, timeout: float) -> bool:
        """Wait while :meth:`behind` (only a group that ends can change that), at most
        ``timeout`` seconds: a record stuck on the database slows the engine, never
        stops it. Whether it caught up. Not behind, it returns without a turn of the
        loop: at a normal pace nothing waits."""
        if not self.behind():
            return True
        self.holds += 1
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

    async def _store(self, group: list[tuple[Sequence[Item], asyncio.Future[Result]]]) -> None:
        await flush_group(self._flush, group)
