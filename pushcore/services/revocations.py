"""Signed-out sessions, as every API process sees them: a set refreshed at most every
half second from the store.

An access token pushcore signs names its session (``sid``); a session signed out
(its refresh tokens revoked: sign-out, a password change, a reused refresh token)
is a row in the store until its last access token has expired. Checking each
request against the store would cost a query per request; instead each process
keeps the ids of the sessions in force in memory and reads them again when its
copy is older than :data:`MAX_AGE` (one indexed query per interval per process,
whatever the traffic, and none while idle). So a sign-out in any process is seen
by every other within MAX_AGE and the query's time; in its own process at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable

from pushcore.ports import Clock, Store

MAX_AGE = 0.5
"""Seconds a process's copy of the signed-out sessions answers before it is read again."""


class SignedOut:
    """The ids of the sessions signed out whose access tokens may still be unexpired."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        max_age: float = MAX_AGE,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._store = store
        self._clock = clock
        self._max_age = max_age
        self._monotonic = monotonic
        self._ids: frozenset[str] = frozenset()
        self._read_at: float | None = None
        self._lock = threading.Lock()

    def among(self, session_ids: Collection[str]) -> set[str]:
        """Those of ``session_ids`` that are signed out (reads the store when this
        process's copy is stale: call it off the event loop)."""
        return set(session_ids) & self._current()

    def __contains__(self, session_id: str) -> bool:
        return session_id in self._current()

    def add(self, session_ids: Iterable[str]) -> None:
        """Sessions this process just signed out (committed): refused here at once."""
        with self._lock:
            self._ids = self._ids | frozenset(session_ids)

    def _current(self) -> frozenset[str]:
        read_at = self._read_at
        if read_at is not None and self._monotonic() - read_at < self._max_age:
            return self._ids
        # One reader at a time; the others wait for its answer rather than ask too.
        with self._lock:
            read_at = self._read_at
            if read_at is None or self._monotonic() - read_at >= self._max_age:
                started = self._monotonic()
                with self._store.read() as tx:
                    found = tx.session_revocations.in_force(self._clock.now())
                # What add() put in meanwhile is in the store too (committed first).
                self._ids = frozenset(found)
                self._read_at = started
            return self._ids
