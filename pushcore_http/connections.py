"""The open connections of one HTTP server: how many there may be, and which to close first.

uvicorn bounds nothing by itself: a connection that sends half a request head,
or nothing, stays open for ever, and each holds a file descriptor. Past the
process's RLIMIT_NOFILE, accept() fails: health checks, the database and the
gateways get no descriptor either. So `pushctl serve` keeps the number of open
client connections below a bound derived from that limit, and when a new
connection would pass it, closes the one that is least useful instead of
refusing the newcomer (which may be a health check):

1. a connection whose request is being held for a 429 (its client is over its
   rate limit: closing it is the refusal, sooner);
2. else the connection that has waited on its client the longest (idle between
   requests, or in a request head or body that makes no progress);
3. else (every connection has a request in progress) the newcomer, with a 503.

:class:`Connections` keeps them in insertion-ordered dicts, so each step is a
dict operation, not a scan of every connection.
"""

from __future__ import annotations

import enum
import logging
import resource
import time
from typing import Protocol

log = logging.getLogger("pushcore.http")

HOLD_EXTENSION = "pushcore.hold"
"""ASGI scope extension (``scope["extensions"][HOLD_EXTENSION]["hold"]``): a callable that
marks the request's connection as held for a refusal (the rate limiter calls it before
it waits), so that the bound closes it first."""

RESERVED_FILES = 384
"""Descriptors left for everything but client connections (at least; a quarter of the
limit when that is more): SQLite's files (three per connection) or PostgreSQL's pool,
the gateways' connection pools (64 each for webhooks, FCM and Web Push), the icon
checks (32), logs and the listening socket."""
FEWEST_CONNECTIONS = 64
"""Below this many, the bound is a quarter of the open-files limit instead."""
WARN_EVERY = 60.0
"""Seconds between two warnings that the bound was reached."""


class Phase(enum.IntEnum):
    """What a connection waits for; the first three wait on the client."""

    IDLE = 0  # between requests (keep-alive)
    HEAD = 1  # for the rest of a request head (or the first byte of one)
    BODY = 2  # for more of a request body
    BUSY = 3  # on the server: a request is being handled


class Connection(Protocol):
    """What :class:`Connections` needs of a protocol instance."""

    def close_for_bound(self) -> None:
        """Close at once (the bound needs the slot)."""


def open_files_limit() -> int:
    """RLIMIT_NOFILE's soft limit, raised to the hard limit first (as Go's runtime does:
    distributions start services with 1,024 and allow far more)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else 1 << 20
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):  # a kernel cap (nr_open) below the hard limit
            pass
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_bound(open_files: int, configured: int = 0) -> int:
    """How many client connections may be open with ``open_files`` descriptors:
    ``configured`` when set (0: derived), never more than the descriptors allow."""
    derived = open_files - max(RESERVED_FILES, open_files // 4)
    if derived < FEWEST_CONNECTIONS:
        derived = max(open_files // 4, 1)
    if configured and configured > derived:
        log.warning(
            "PUSHCORE_HTTP_MAX_CONNECTIONS=%d is more than %d open files allow: using %d"
            " (raise the limit: ulimit -n, or LimitNOFILE= in a systemd unit)",
            configured,
            open_files,
            derived,
        )
    return min(configured, derived) if configured else derived


def channel_bound(connections: int, configured: int = 0) -> int:
    """How many live channels may be open with ``connections`` client connections:
    ``configured`` when set (0: derived), never more than three quarters of them, so
    that every other request (``/healthz``, sign-in, the API) keeps a quarter."""
    derived = max(connections * 3 // 4, 1)
    if configured > derived:
        log.warning(
            "PUSHCORE_LIVE_MAX_CHANNELS=%d is more than three quarters of the %d client"
            " connections: using %d",
            configured,
            connections,
            derived,
        )
    return min(configured, derived) if configured else derived


class Connections:
    """The open client connections of one server, against their bound."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._open: set[Connection] = set()
        # Waiting on their clients, oldest progress first (moved to the end on progress).
        self._waiting: dict[Connection, None] = {}
        # Whose request is held for a refusal, oldest first.
        self._held: dict[Connection, None] = {}
        self._warned = -WARN_EVERY

    def __len__(self) -> int:
        return len(self._open)

    def admit(self, conn: Connection) -> bool:
        """Count a new connection (waiting for its head); False when it must be refused
        because every other one has a request in progress."""
        self._open.add(conn)
        self._waiting[conn] = None
        if len(self._open) <= self.bound:
            return True
        victim = next(iter(self._held), None) or next(iter(self._waiting))
        self._warn()
        if victim is conn:
            self.forget(conn)
            return False
        victim.close_for_bound()
        self.forget(victim)
        return True

    def waiting(self, conn: Connection) -> None:
        """``conn`` waits on its client from now on (or made progress)."""
        if conn in self._open:
            self._waiting.pop(conn, None)
            self._waiting[conn] = None

    def busy(self, conn: Connection) -> None:
        """``conn`` has a request in progress: not closed for the bound (unless held)."""
        self._waiting.pop(conn, None)

    def hold(self, conn: Connection) -> None:
        """``conn``'s request is held for a refusal until its answer is complete."""
        if conn in self._open:
            self._held[conn] = None

    def release(self, conn: Connection) -> None:
        """``conn``'s held answer is complete."""
        self._held.pop(conn, None)

    def forget(self, conn: Connection) -> None:
        """``conn`` is closed (idempotent)."""
        self._open.discard(conn)
        self._waiting.pop(conn, None)
        self._held.pop(conn, None)

    def _warn(self) -> None:
        now = time.monotonic()
        if now - self._warned >= WARN_EVERY:
            self._warned = now
            log.warning(
                "%d client connections open, the bound: closing the least useful"
                " (held for a 429, else the one waiting longest on its client)",
                self.bound,
            )
