"""Bounds on how long a PostgreSQL transaction waits for a server that does not answer.

The server's own timeouts (statement_timeout, lock_timeout) need a server
that runs. One that stopped answering (frozen, its host gone without a
reset, a network cut) leaves a query waiting for ever: libpq has no
client-side timeout for a query. :class:`Watchdog` gives each transaction a
deadline, and :class:`Breaker` keeps every other request from waiting out
that deadline again while the server is known not to answer.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pushcore.domain.errors import Unavailable

log = logging.getLogger("pushcore.storage")


class Watch:
    """One watched transaction: its connection, its deadline, and whether it was cut."""

    __slots__ = ("conn", "cut", "deadline")

    def __init__(self, conn: Any, deadline: float) -> None:
        self.conn = conn
        self.deadline = deadline
        self.cut = False


class Watchdog:
    """Cuts the connection of a transaction that outlived its deadline.

    Shutting the socket down wakes the driver waiting on it at once ("server
    closed the connection"), the transaction fails, and the pool discards
    the connection. A thread looks every ``period`` seconds: deadlines are
    met within that much, and a transaction costs a set insert and removal.
    """

    def __init__(self, limit: float, period: float = 0.2) -> None:
        self.limit = limit
        self._period = period
        self._lock = threading.Lock()
        self._watched: set[Watch] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @contextmanager
    def watch(self, conn: Any) -> Iterator[Watch]:
        """Watch the block's use of ``conn``; Unavailable if it was cut for its deadline."""
        watch = Watch(conn, time.monotonic() + self.limit)
        with self._lock:
            self._watched.add(watch)
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._run, name="pushcore-pg-watchdog", daemon=True
                )
                self._thread.start()
        try:
            yield watch
        except Exception as exc:
            if watch.cut:
                raise Unavailable(
                    f"The database did not answer within {self.limit:g} s; try again shortly"
                ) from exc
            raise
        finally:
            with self._lock:
                self._watched.discard(watch)

    def close(self) -> None:
        """Stop the thread."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(2)

    def _run(self) -> None:
        while not self._stop.wait(self._period):
            now = time.monotonic()
            with self._lock:
                # Under the lock: a watch that ended is gone from the set, so a
                # connection given back to the pool is never cut for its old user.
                for watch in self._watched:
                    if not watch.cut and now >= watch.deadline:
                        watch.cut = True
                        _shut_down(watch.conn)


def _shut_down(conn: Any) -> None:
    try:
        fd = conn.pgconn.socket
    except Exception:  # already closed: nothing waits on it
        return
    try:
        # A duplicate descriptor of the same socket: shutdown() acts on the
        # connection itself, close() only on the duplicate.
        with socket.socket(fileno=os.dup(fd)) as sock:
            sock.shutdown(socket.SHUT_RDWR)
    except OSError as exc:
        log.debug("could not cut a stuck database connection: %s", exc)
    else:
        log.warning("cut a database connection that got no answer in time")


class Breaker:
    """After a wait for the server ran out, one caller at a time waits for it; the
    others fail at once with Unavailable, until a transaction succeeds.

    Without it, every request during an outage would wait out the whole bound
    (a pool wait, a transaction's deadline) and hold a thread meanwhile: under
    load the threads run out and answers come later and later. The one caller
    let through (a request, a readiness probe) is how the breaker learns that
    the server is back; it closes with that caller's success.
    """

    def __init__(self) -> None:
        self._open = False
        self._trial = threading.Lock()

    @property
    def open(self) -> bool:
        """Whether the last wait for the server ran out and no transaction succeeded since."""
        return self._open

    @contextmanager
    def admit(self) -> Iterator[None]:
        """Let the block run, or raise Unavailable when open and another caller is trying."""
        if not self._open:
            yield
            return
        if not self._trial.acquire(blocking=False):
            raise Unavailable("The database is not answering; try again shortly")
        try:
            yield
        finally:
            self._trial.release()

    def trip(self) -> None:
        """A wait for the server ran out: open."""
        self._open = True

    def reset(self) -> None:
        """A transaction succeeded: close."""
        self._open = False
