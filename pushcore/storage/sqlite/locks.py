"""The SQLite store's two writer locks, each waited for with a deadline.

A writer first queues on :class:`FairLock` (the threads of this process),
then on :class:`FileLock` (the processes on this database), then on SQLite's
own lock (its busy handler). All three waits are bounded: a database locked
past a short wait must answer "unavailable" within seconds, never hang a
request behind a queue of writers that each wait their turn.
"""

from __future__ import annotations

import fcntl
import threading
import time
from collections import deque
from collections.abc import Callable

# How long a waiter that is not urgent lets the urgent ones go first. A burst keeps an
# urgent record waiting at every release (one per recorder thread), and the others then
# waited for the whole burst: the roll-ups, which write the event webhooks' outbox (with
# the burst lead, a burst of 5,000 to one webhook had most of its events written only
# once it was out: 1.4-1.7 s late at the 99th percentile), the claims (1.1 s) and an
# API's writes (in a long enough burst, past LOCK_WAIT_SECONDS: a 503). Past this wait
# such a waiter goes next, and a record waits for one more transaction (a roll-up's
# 5-20 ms) (docs/benchmarks.md, "Event webhooks: beside the engine", 2026-11-28).
PATIENCE = 0.05


class FairLock:
    """A lock granted in the order it was asked for, waited for at most a timeout.

    ``threading.Lock`` is not fair: a thread that releases it and asks again at
    once (the group writer under a steady load) nearly always gets it back,
    and the engine's claims, waiting for the same lock, could wait for ever.
    Here a release hands the lock to the longest waiter, urgent ones first (the
    engine's record of answers, which a crash would otherwise send again), unless
    the longest waiter that is not urgent has waited :data:`PATIENCE` already.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._mutex = threading.Lock()
        self._held = False
        # Each waiter's turn (a lock its hand-over releases), and when it began to wait.
        self._waiters: deque[tuple[threading.Lock, float]] = deque()
        self._urgent = 0  # the first this many waiters are urgent ones
        self._clock = clock

    @property
    def waiting(self) -> int:
        """How many wait for the lock now."""
        with self._mutex:
            return len(self._waiters)

    def acquire(self, timeout: float, *, urgent: bool = False) -> bool:
        """Take the lock within ``timeout`` seconds (``urgent``: before the other waiters
        who are not, for :data:`PATIENCE`); False (not taken) when it did not come."""
        with self._mutex:
            if not self._held:
                self._held = True
                return True
            turn = threading.Lock()
            turn.acquire()
            waiter = (turn, self._clock())
            if urgent:
                self._waiters.insert(self._urgent, waiter)
                self._urgent += 1
            else:
                self._waiters.append(waiter)
        # Released by the holder that hands the lock over to this waiter.
        if turn.acquire(timeout=timeout):
            return True
        with self._mutex:
            if waiter in self._waiters:
                if self._waiters.index(waiter) < self._urgent:
                    self._urgent -= 1
                self._waiters.remove(waiter)
                return False
        # Handed over between the timeout and the mutex: it is ours after all.
        return True

    def release(self) -> None:
        """Hand the lock to the longest waiter (urgent first, within :data:`PATIENCE`),
        or free it."""
        with self._mutex:
            if not self._waiters:
                self._held = False
                return
            patient = self._urgent < len(self._waiters)
            if patient and self._clock() - self._waiters[self._urgent][1] >= PATIENCE:
                turn, _ = self._waiters[self._urgent]
                del self._waiters[self._urgent]
            else:
                turn, _ = self._waiters.popleft()
                self._urgent = max(0, self._urgent - 1)
            turn.release()  # still held: by the next in line


class FileLock:
    """An exclusive flock on a file, waited for at most a timeout; one waiter at a time.

    A blocked flock() wakes the moment its holder lets go, which polling with
    LOCK_NB and sleeps would not (SQLite's busy handler sleeps 1, 2, 5, 10 ...
    100 ms between tries: with an API and workers writing all the time those
    sleeps left a third of two cores idle). But a blocked flock() cannot be
    given a timeout, so when the lock is taken, a helper thread blocks in it
    and the caller waits for the helper, with a deadline. A lock the helper
    gets after its caller gave up goes to the next caller still waiting, or is
    let go at once. The lock belongs to the open file, so the helper takes it
    for whichever thread of the process holds the store's :class:`FairLock`
    (callers must hold it: one caller at a time).
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._cond = threading.Condition()
        self._waiting = 0  # callers waiting for the helper
        self._asked = False  # the helper is (or is about to be) blocked in flock()
        self._ready = False  # the helper holds the lock for the next caller
        self._closed = False
        self._helper: threading.Thread | None = None

    def acquire(self, timeout: float) -> bool:
        """Take the lock within ``timeout`` seconds; False (not taken) when it did not come."""
        with self._cond:
            if self._ready:
                self._ready = False
                return True
            if not self._asked:
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return True
                except BlockingIOError:
                    self._ask_helper()
            self._waiting += 1
            try:
                self._cond.wait_for(lambda: self._ready, timeout)
                if self._ready:
                    self._ready = False
                    return True
                return False
            finally:
                self._waiting -= 1

    def release(self) -> None:
        """Let the lock go."""
        fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        """Before the file is closed: the helper must not touch its descriptor again (the
        number may already name another file); a lock it still gets goes with the file."""
        with self._cond:
            self._closed = True

    def _ask_helper(self) -> None:
        # Called holding the condition.
        self._asked = True
        if self._helper is None:
            self._helper = threading.Thread(
                target=self._serve, name="pushcore-writer-lock", daemon=True
            )
            self._helper.start()
        else:
            self._cond.notify_all()

    def _serve(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._asked)
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
            except OSError:  # the store closed its file: nothing left to lock
                return
            with self._cond:
                self._asked = False
                if self._closed:
                    return
                if self._waiting:
                    self._ready = True
                    self._cond.notify_all()
                else:
                    # Its caller gave up meanwhile: hold nothing nobody waits for.
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
