"""LISTEN for inbox entries committed by any process on the PostgreSQL database."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import psycopg

from pushcore.live.hub import Changed, Watch
from pushcore.storage.postgres.dialect import INBOX_CHANNEL
from pushcore.storage.postgres.store import connection_info
from pushcore.storage.sql.inbox import read_change

log = logging.getLogger("pushcore.live")
RECONNECT = 1.0  # seconds between attempts while the server is away


def inbox_watch(url: str) -> Watch:
    """A watch for the live hub: on each NOTIFY of the inbox's writers
    (storage/sql/inbox.py), ``committed`` (new entries) or ``changed`` (a read or a
    dismissal, from its payload), on a thread and connection of its own, until
    stopped. Once connected again after a loss it calls ``committed`` too: what was
    committed meanwhile is read then."""
    conninfo = connection_info(url)

    def start(committed: Callable[[], None], changed: Changed) -> Callable[[], None]:
        stop = threading.Event()
        thread = threading.Thread(
            target=_listen,
            args=(conninfo, committed, changed, stop),
            name="pushcore-listen",
            daemon=True,
        )
        thread.start()
        return stop.set

    return start


def _listen(
    conninfo: str, committed: Callable[[], None], changed: Changed, stop: threading.Event
) -> None:
    while not stop.is_set():
        try:
            with psycopg.connect(conninfo, autocommit=True) as conn:
                conn.execute(f"LISTEN {INBOX_CHANNEL}")
                committed()
                while not stop.is_set():
                    # Ends after the timeout, so that a stop is seen within it.
                    for notify in conn.notifies(timeout=0.5):
                        change = read_change(notify.payload)
                        if change is None:
                            committed()
                        else:
                            changed(*change)
        except psycopg.Error as exc:
            log.warning("live channels: lost the PostgreSQL listener (%s); retrying", exc)
            stop.wait(RECONNECT)
