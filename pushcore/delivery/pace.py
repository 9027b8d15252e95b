"""Sends wait while answers go unrecorded: the engine's pace follows its records.

API.md ("Limits and fairness"): an answer is recorded within 100 ms, so that a crash
repeats only the last ~100 ms of sends. When one process sends as fast as it can, its
event loop is busy every moment, and the threads that record wait for the interpreter
at each statement: answers then went 100-230 ms unrecorded at 5,000 deliveries a
second asked (docs/benchmarks.md, "Crash repeats"), however the records were grouped.
So the engine notes each answer as it comes (:meth:`RecordPace.answered`) and as it is
recorded (:meth:`RecordPace.recorded`), and a gateway awaits :meth:`RecordPace.ready`
before each request it starts: while the oldest answer waiting is older than
:data:`LATE`, no request starts, the loop has less to do, and the records catch up. At
a rate the records keep up with, the oldest is never that old and nothing waits.

A wait is bounded (:data:`LONGEST_WAIT`): a record held up that long is a database in
trouble, whose retries the engine makes anyway; sending on then is what happened
before, and the in-flight cap still bounds what a crash can repeat.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable

# An answer this old and unrecorded stops requests from starting. Half of API.md's
# 100 ms: what is being recorded then still takes its own transaction (20-60 ms at
# the p99 on a busy loop). Measured at 5,000/s asked (docs/benchmarks.md).
LATE = 0.05
# The longest one request waits for the records (see the module's docstring).
LONGEST_WAIT = 1.0


class RecordPace:
    """The answers not yet recorded, oldest first, and the requests waiting for them."""

    def __init__(self, late: float = LATE, longest_wait: float = LONGEST_WAIT) -> None:
        self._late = late
        self._longest_wait = longest_wait
        # Each answer's key with the loop time it came (insertion order: oldest first).
        self._waiting: dict[str, float] = {}
        self._caught_up: asyncio.Event | None = None  # made on the loop, at a first wait

    def answered(self, key: str) -> None:
        """An answer came for ``key`` (a delivery's id); it waits to be recorded."""
        self._waiting.setdefault(key, asyncio.get_running_loop().time())

    def recorded(self, keys: Iterable[str]) -> None:
        """These answers are recorded (or given up: the engine stopping)."""
        for key in keys:
            self._waiting.pop(key, None)
        if self._caught_up is not None and not self.behind():
            self._caught_up.set()

    def behind(self) -> bool:
        """Whether the oldest answer waiting is older than the limit."""
        for came in self._waiting.values():  # the first is the oldest
            return asyncio.get_running_loop().time() - came > self._late
        return False

    async def ready(self) -> None:
        """Return once the records have caught up (or after the longest wait)."""
        if not self.behind():
            return
        if self._caught_up is None:
            self._caught_up = asyncio.Event()
        self._caught_up.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._longest_wait):
                while self.behind():
                    await self._caught_up.wait()
                    self._caught_up.clear()
