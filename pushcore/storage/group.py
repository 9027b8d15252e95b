"""Group commit: one writer thread commits many callers' short writes together.

A request that writes hands its work (a function of a transaction) to the
writer and waits for the commit that holds it: N concurrent creates then
cost one BEGIN, one set of counter upserts and one COMMIT (one WAL flush on
PostgreSQL), not N, and no thread of the server queues on the write lock.
The answer is given only after that COMMIT returned, so an acknowledged
write is durably stored; when the COMMIT fails, every caller of the group
gets its error and none is told its work was stored.

A work that raises (a device that does not exist, a notification no
longer cancellable) is undone alone, with the counts it tallied, and its
caller gets its error; the others still commit. Works run without a
savepoint each (two statements per work saved): one that refuses before it
wrote anything needs no undoing; when one fails after it wrote, or a
statement of it failed, the group is rolled back and run again with a
savepoint per work, so the others still commit without it.

Works of one kind (:class:`~pushcore.ports.Together`: a group's PATCHes) run
one after another, after one read for all of them that each then finds, and
their writes go out together as the creates' do: one locked read, one
UPDATE of many rows, not three statements each.

A group is bounded in works and in time, so the
delivery engine's claims, which queue for the same write lock, wait for at
most one short group and never behind a long stream of ingest.

When a group fails because the database is unavailable (the store's bounded
waits ran out: locked, unreachable, not answering, full), every work still
waiting fails with it at once: each next group would wait out the same
bound again, and callers queued behind several of them would wait for
several bounds. So a caller hears of an outage within about one bound of
submitting.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any, TypeVar

from pushcore.domain.errors import PushcoreError, Unavailable
from pushcore.ports import Store, Together, Transaction

T = TypeVar("T")

# One group's bounds: at most this many works, and no new work started once
# the group has run this long (a SQLite create takes ~0.1 ms, a claim waits
# for at most about this).
MAX_GROUP = 64
MAX_GROUP_SECONDS = 0.005
# At most this many works of one kind to a round (one prepare): a round, its
# rows read, runs to its end past the time bound (at ~0.1 ms a PATCH, ~1.6 ms),
# since a round cut short would have the next group read its rest again.
MAX_ROUND = 16


class _Job:
    """A work and how its caller waits: a thread on a Future, or a task on an event loop."""

    __slots__ = ("error", "future", "loop", "prepare", "result", "together", "work")

    def __init__(
        self,
        work: Callable[[Transaction], Any],
        future: Future[Any] | asyncio.Future[Any],
        loop: asyncio.AbstractEventLoop | None,
        together: Together | None = None,
    ) -> None:
        self.work = work
        self.future = future
        self.loop = loop
        self.together = together
        # The keys to prepare before this work, the first of its round (_rounds).
        self.prepare: list[Any] | None = None
        self.result: Any = None
        self.error: BaseException | None = None

    def start(self) -> bool:
        """Whether to run it: False when its caller gave up (cancelled) before it ran."""
        if isinstance(self.future, Future):
            return self.future.set_running_or_notify_cancel()
        # Read from the writer's thread: a cancel just after is as if it came
        # while the work ran (it is committed, the answer dropped).
        return not self.future.cancelled()


class _Replay(Exception):
    """The group's transaction is rolled back, to run again with a savepoint per work."""


@contextlib.contextmanager
def _held(tx: Transaction, parts: bool) -> Iterator[None]:
    """Without savepoints: the works' inserts held to the end (Transaction.grouped),
    and a failure to send them runs the group again."""
    if parts:
        yield
        return
    try:
        with tx.grouped():
            yield
    except _Replay:
        raise
    except BaseException as exc:
        raise _Replay from exc


def _kind(job: _Job) -> object:
    return None if job.together is None else job.together.prepare


def _rounds(run: list[_Job]) -> list[_Job]:
    """Works of one kind in rounds of distinct keys (at most :data:`MAX_ROUND`), the
    first of each round with the round's keys to prepare: a key's next work is in
    a later round than its last, so works of one key keep their order, each after
    the one before wrote."""
    rounds: list[list[_Job]] = []
    keys: list[list[Any]] = []
    after: dict[Any, int] = {}  # the first round a key's next work may join
    for job in run:
        assert job.together is not None
        key = job.together.key
        at = after.get(key, 0)
        while at < len(rounds) and len(rounds[at]) >= MAX_ROUND:
            at += 1
        if at == len(rounds):
            rounds.append([])
            keys.append([])
        rounds[at].append(job)
        keys[at].append(key)
        after[key] = at + 1
    for round_, round_keys in zip(rounds, keys, strict=True):
        round_[0].prepare = round_keys
    return [job for round_ in rounds for job in round_]


def _gathered(group: list[_Job]) -> list[_Job]:
    """The group with each kind of :class:`Together` work moved up to the first of
    its kind, in rounds (:func:`_rounds`); the others stay where they were."""
    if all(job.together is None for job in group):
        return group
    runs: dict[object, list[_Job]] = {}
    order: list[list[_Job]] = []
    for job in group:
        job.prepare = None  # a carried work's round is made again
        kind = _kind(job)
        if kind is None:
            order.append([job])
        elif kind in runs:
            runs[kind].append(job)
        else:
            order.append(runs.setdefault(kind, [job]))
    return [job for run in order for job in (_rounds(run) if _kind(run[0]) else run)]


def _settle(jobs: list[_Job]) -> None:
    """Give each job's caller its outcome (on the caller's loop, for asyncio callers)."""
    for job in jobs:
        future = job.future
        if isinstance(future, asyncio.Future) and future.cancelled():
            continue
        if job.error is None:
            future.set_result(job.result)
        else:
            future.set_exception(job.error)


class GroupWriter:
    """Runs submitted writes on one thread, many to a transaction."""

    def __init__(
        self,
        store: Store,
        *,
        max_group: int = MAX_GROUP,
        max_group_seconds: float = MAX_GROUP_SECONDS,
    ) -> None:
        self._store = store
        self._max_group = max_group
        self._max_seconds = max_group_seconds
        self._queue: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        # Works taken from the queue but left for the next group by its bounds.
        self._carried: deque[_Job] = deque()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(
        self, work: Callable[[Transaction], T], together: Together | None = None
    ) -> Future[T]:
        """Run ``work`` in a group's transaction; the future is done once that committed.

        Its result is ``work``'s result, or the error ``work`` raised (its
        writes undone), or the error that kept the group from committing.
        ``together``: run with the group's others of its kind (see the module).
        """
        future: Future[T] = Future()
        self._put(_Job(work, future, None, together))
        return future

    def submit_async(
        self, work: Callable[[Transaction], T], together: Together | None = None
    ) -> asyncio.Future[T]:
        """:meth:`submit` for a caller on an event loop: await the answer, no thread held.

        A group's answers reach each loop in one call, not one wake-up per work.
        ``together``: run with the group's others of its kind (see the module).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._put(_Job(work, future, loop, together))
        return future

    def run(self, work: Callable[[Transaction], T]) -> T:
        """:meth:`submit` and wait for the result (for callers on a thread of their own)."""
        return self.submit(work).result()

    def _put(self, job: _Job) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the writer is closed")
            if self._thread is None:
                # Started on first use: pushctl commands that only read need no thread.
                self._thread = threading.Thread(
                    target=self._serve, name="pushcore-writer", daemon=True
                )
                self._thread.start()
            self._queue.put(job)

    def close(self) -> None:
        """Finish what was submitted, then stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
            self._queue.put(None)
        if thread is not None:
            thread.join()

    def _serve(self) -> None:
        stopping = False
        while not stopping or self._carried:
            group: list[_Job] = []
            while len(group) < self._max_group:
                if self._carried:
                    group.append(self._carried.popleft())
                    continue
                try:
                    # Wait for a first work; after it, take only what is already queued.
                    job = self._queue.get_nowait() if group or stopping else self._queue.get()
                except queue.Empty:
                    break
                if job is None:
                    stopping = True
                    break
                if job.start():
                    group.append(job)
            if group:
                settled, failure = self._commit(_gathered(group))
                if isinstance(failure, Unavailable):
                    stopping = self._fail_waiting(settled, failure) or stopping
                self._answer(settled)

    def _fail_waiting(self, settled: list[_Job], failure: Unavailable) -> bool:
        """Fail every waiting work (carried or queued) with ``failure``, adding them to
        ``settled``; whether close() was called meanwhile."""
        stopping = False
        waiting = list(self._carried)
        self._carried.clear()
        while True:
            try:
                job = self._queue.get_nowait()
            except queue.Empty:
                break
            if job is None:
                stopping = True
            elif job.start():
                waiting.append(job)
        for job in waiting:
            job.result, job.error = None, failure
        settled.extend(waiting)
        return stopping

    def _commit(self, group: list[_Job]) -> tuple[list[_Job], BaseException | None]:
        """Run the group's works in one transaction; the jobs it settled (the rest
        carried), and the error that kept the group from committing, if one did.

        First without savepoints (two statements fewer per work): a work that
        refuses before it wrote anything (its checks: a device that does not
        exist, a notification no longer cancellable) is left out alone, as a
        savepoint would have undone it. A work that fails after it wrote, or
        whose statement failed (on PostgreSQL that spoils the transaction), has
        the whole group rolled back and run again, each work in a savepoint.
        """
        outcome = self._run(group, parts=False)
        if outcome is not None:
            return outcome
        for job in group:
            job.result, job.error = None, None
        replayed = self._run(group, parts=True)
        assert replayed is not None  # parts never ask for a replay
        return replayed

    def _run(
        self, group: list[_Job], *, parts: bool
    ) -> tuple[list[_Job], BaseException | None] | None:
        """:meth:`_commit` with or without a savepoint per work; None: run it again with."""
        ran: list[_Job] = []
        rest: list[_Job] = []
        try:
            with self._store.transaction() as tx, _held(tx, parts):
                started = time.perf_counter()
                for index, job in enumerate(group):
                    # A round of Together works, its rows read, is not cut (_rounds).
                    within = job.together is not None and job.prepare is None
                    if index and not within and time.perf_counter() - started >= self._max_seconds:
                        # Out of time: the rest go first in the next group.
                        rest = group[index:]
                        break
                    ran.append(job)
                    if parts:
                        try:
                            with tx.savepoint():
                                job.result = job.work(tx)
                        except BaseException as exc:  # raised again in the caller, not here
                            job.error = exc
                        continue
                    if job.together is not None and job.prepare is not None:
                        try:
                            # Reads only: a failure runs the group again, with no prepare.
                            job.together.prepare(tx, job.prepare)
                        except BaseException as exc:
                            raise _Replay from exc
                    before = tx.changes()
                    try:
                        job.result = job.work(tx)
                    except PushcoreError as exc:
                        if isinstance(exc, Unavailable) or tx.changes() != before:
                            raise _Replay from exc
                        job.error = exc
                    except BaseException as exc:
                        raise _Replay from exc
        except _Replay:
            return None
        except BaseException as exc:
            # Nothing of the group was stored: every caller of it hears why,
            # but for those carried to the next group (a failed BEGIN carries none).
            self._carried.extendleft(reversed(rest))
            failed = group[: len(group) - len(rest)]
            for job in failed:
                job.result, job.error = None, exc
            return failed, exc
        self._carried.extendleft(reversed(rest))
        return ran, None

    def _answer(self, jobs: list[_Job]) -> None:
        """After the COMMIT (or the failure): answer threads now, each event loop at once."""
        by_loop: defaultdict[asyncio.AbstractEventLoop, list[_Job]] = defaultdict(list)
        threaded: list[_Job] = []
        for job in jobs:
            if job.loop is None:
                threaded.append(job)
            else:
                by_loop[job.loop].append(job)
        _settle(threaded)
        for loop, waiting in by_loop.items():
            # A closed loop (RuntimeError) has nobody left to answer.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, waiting)
