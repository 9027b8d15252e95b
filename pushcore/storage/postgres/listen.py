"""LISTEN for inbox entries committed by any process on the PostgreSQL database."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg

from pushcore.storage.postgres.dialect import INBOX_CHANNEL
from pushcore.storage.postgres.store import connection_info

log = logging.getLogger("pushcore.live")
RECONNECT = 1.0  # seconds between attempts while the server is away


def inbox_watch(url: str) -> Callable[[Callable[[], None]], Callable[[], None]]:
    """A watch for the live hub: calls its function on each NOTIFY of the inbox's
    writers (storage/sql/inbox.py), on a thread and connection of its own, until
    stopped. Once connected again after a loss it calls it too: what was
    committed meanwhile is read then."""
    conninfo = connection_info(url)

    def start(committed: Callable[[], None]) -> Callable[[], None]:
        stop = threading.Event()
        thread = threading.Thread(
            target=_listen, args=(conninfo, committed, stop), name="pushcore-listen", daemon=True
        )
        thread.start()
        return stop.set

    return start


def _listen(conninfo: str, committed: Callable[[], None], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute(f"LISTEN {INBOX_CHANNEL}")
                committed()
                while not stop.is_set():
                    # Ends after the timeout, so that a stop is seen within it.
                    for _ in conn.notifies(timeout=0.5):
                        committed()
        except psycopg.Error as exc:
            log.warning("live channels: lost the PostgreSQL listener (%s); retrying", exc)
            stop.wait(RECONNECT)
