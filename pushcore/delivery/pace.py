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
import bisect
import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field

# An answer this old and unrecorded stops requests from starting. Half of API.md's
# 100 ms: what is being recorded then still takes its own transaction (20-60 ms at
# the p99 on a busy loop). Measured at 5,000/s asked (docs/benchmarks.md).
LATE = 0.05
# The longest one request waits for the records (see the module's docstring).
LONGEST_WAIT = 1.0
# How long one group's record may take, so that its answers, which may also wait for
# the group before theirs, are stored within API.md's 100 ms: the engine hands at
# once (the in-flight cap, ``EngineConfig.max_in_flight``) no more than it can record
# in this long, at the measured cost of a record (:class:`RecordCost`).
RECORD_BUDGET = 0.06
# Records of fewer answers say more about a transaction's fixed cost than an answer's:
# beside a busy engine, groups of 256 (a claim's) took 3-12 ms, 12-47 us an answer,
# where groups of 1,000-2,800 took 9-17 us an answer (docs/benchmarks.md, "Local-time
# sends"). Only bursts make groups this large, and only bursts need the bound.
RECORD_SAMPLE = 512
# The share of each new measurement in the running estimate.
RECORD_WEIGHT = 0.3
# How long records must keep in time before hands that were too large grow back.
RECORD_RELAX = 10.0
# Never fewer in flight than a claim's batch: the bound is for bursts, not a trickle.
LEAST_IN_FLIGHT = 256
# The upper bounds (seconds) of the record lag's buckets: API.md's 100 ms among them.
LAG_BOUNDS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


@dataclass
class RecordLag:
    """How long answers waited for their records: counts by :data:`LAG_BOUNDS` (the
    last count is past the last bound), their sum and the longest, in seconds."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(LAG_BOUNDS) + 1))
    total: float = 0.0
    longest: float = 0.0

    def add(self, seconds: float) -> None:
        """One answer recorded ``seconds`` after it came."""
        self.counts[bisect.bisect_left(LAG_BOUNDS, seconds)] += 1
        self.total += seconds
        self.longest = max(self.longest, seconds)

    def past(self, seconds: float) -> int:
        """How many waited longer than ``seconds`` (one of :data:`LAG_BOUNDS`)."""
        return sum(self.counts[LAG_BOUNDS.index(seconds) + 1 :])


class RecordPace:
    """The answers not yet recorded, oldest first, and the requests waiting for them."""

    def __init__(self, late: float = LATE, longest_wait: float = LONGEST_WAIT) -> None:
        self._late = late
        self._longest_wait = longest_wait
        # Each answer's key with the loop time it came (insertion order: oldest first).
        self._waiting: dict[str, float] = {}
        self._caught_up: asyncio.Event | None = None  # made on the loop, at a first wait
        # Each recorded answer's wait, for the metrics (API.md's 100 ms: what a crash repeats).
        self.lag = RecordLag()

    def answered(self, key: str) -> None:
        """An answer came for ``key`` (a delivery's id); it waits to be recorded."""
        self._waiting.setdefault(key, asyncio.get_running_loop().time())

    def recorded(self, keys: Iterable[str], stored: bool = True) -> float:
        """These answers are recorded (``stored``), or given up (the engine stopping:
        not counted in :attr:`lag`); the longest any of them waited, in seconds."""
        now, longest = asyncio.get_running_loop().time(), 0.0
        for key in keys:
            came = self._waiting.pop(key, None)
            if stored and came is not None:
                self.lag.add(now - came)
                longest = max(longest, now - came)
        if self._caught_up is not None and not self.behind():
            self._caught_up.set()
        return longest

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


class RecordCost:
    """What recording one answer costs, measured (each large group's wall time: its wait
    for the writer, and for the interpreter beside the busy loop, included; ``cost``
    until then), and so how many answers may be outstanding at once.

    The pace (:class:`RecordPace`) holds requests once an answer is late; but a batch
    gateway's burst (a local-time send's zone at 09:00: thousands due at one instant,
    claimed ahead by the burst lead) is handed whole, up to the in-flight cap, before
    any answer is late, and its answers then all wait for one record. On a machine
    where that record takes longer than the budget, this bounds the hand instead.
    """

    def __init__(self, cost: float, budget: float = RECORD_BUDGET) -> None:
        self.measured = cost
        # Over 1 while records came late at the measured cost (a busy machine, the
        # writer's other work): back to 1 as they come in time again.
        self.penalty = 1.0
        self._since = 0.0  # when the penalty last changed (the loop's time)
        self._budget = budget

    @property
    def cost(self) -> float:
        """Seconds to record one answer, as the bound counts it."""
        return self.measured * self.penalty

    def took(self, count: int, seconds: float) -> None:
        """A record of ``count`` answers took ``seconds``."""
        if count >= RECORD_SAMPLE:
            self.measured += RECORD_WEIGHT * (seconds / count - self.measured)

    def waited(self, seconds: float, now: float) -> None:
        """A record's oldest answer waited ``seconds`` for it (``now``: the loop's
        time). Past the budget, the hands were too large for the records: they
        shrink by as much (at most by half at a time). Once records have come in time
        for :data:`RECORD_RELAX` since, they grow back by half towards the measured
        cost's, never past it: the bound never sticks low after a slow moment, and
        a burst's many quick records do not undo it within the burst (in which the
        hands grew back too soon and its answers waited up to 128 ms)."""
        if seconds > self._budget:
            self.penalty *= min(2.0, seconds / self._budget)
            self._since = now
        elif self.penalty > 1.0 and now - self._since >= RECORD_RELAX:
            self.penalty = max(1.0, self.penalty / 2)
            self._since = now

    def keeps(self) -> int:
        """How many answers one record stores within the budget (at least
        :data:`LEAST_IN_FLIGHT`)."""
        return max(LEAST_IN_FLIGHT, round(self._budget / self.cost))
