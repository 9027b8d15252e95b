"""The workers of one `pushctl serve --workers N` telling each other what no database tells.

The workers share a machine: each binds a Unix datagram socket in a
directory the command made for them and sends the others a datagram for:

- **wake-ups**, on every database: a notification created through a worker
  without the delivery engine wakes the engine of worker 1 at once, as a
  create through worker 1 does (otherwise the engine would find it on its
  next tick, ``PUSHCORE_SCHEDULER_TICK_SECONDS``);
- **inbox news**, on SQLite: PostgreSQL brings another process's new
  entries, reads and dismissals to each process through LISTEN/NOTIFY
  (pushcore.storage.postgres.listen); on SQLite new entries are found by each
  hub's poll of the latest entry's number, but a read or a dismissal leaves
  no number to poll for. The hub's :attr:`~pushcore.live.LiveHub.tell` sends
  what this process's services report; the others' thread hands it to their
  hubs (:meth:`LiveHub.look`, :meth:`LiveHub.hand`, which tell nobody further).

A datagram that cannot be sent at once (the other worker's buffer full, or it
is gone) is dropped: the engine's tick and the hub's poll still find the
work; a lost read or dismissal reaches that worker's channels only through
their clients' next read of the inbox.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
from datetime import datetime
from pathlib import Path

from pushcore.domain.inbox import InboxChange
from pushcore.live.hub import LiveHub
from pushcore.services.notifications import WakeRelay
from pushcore.storage.sql.inbox import change_payloads, read_change

log = logging.getLogger("pushcore.live")

MAX_DATAGRAM = 64 * 1024  # a payload is under 8,000 bytes (change_payloads)
# Not empty: an empty read is the socket shut down. Any payload read_change does not
# read as a change means new entries.
NEW_ENTRIES = "{}"
WAKE = '{"wake"'  # how a wake-up's payload begins


def socket_path(directory: Path, index: int) -> Path:
    """Where worker ``index`` (0 first) receives."""
    return directory / f"worker-{index + 1}.sock"


class Siblings:
    """This worker's socket, and the other workers' addresses: an InboxSignal to tell,
    and, in a worker without the engine, the Waker its services wake."""

    def __init__(self, directory: Path, index: int, count: int) -> None:
        self._inbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._inbox.bind(str(socket_path(directory, index)))
        self._out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._out.setblocking(False)
        self._others = [str(socket_path(directory, i)) for i in range(count) if i != index]

    def listen(self, wakes: WakeRelay, hub: LiveHub | None, *, engine: bool) -> None:
        """Pass wake-ups on to the engine's worker (unless ``engine``: this one runs it,
        and wakes it with what the others send); with ``hub`` (SQLite), hand it what the
        others report and tell them what it is told."""
        if not engine:
            wakes.engine = self
        if hub is not None:
            hub.tell = self
        thread = threading.Thread(
            target=self._receive, args=(wakes if engine else None, hub), daemon=True
        )
        thread.name = "pushcore-siblings"
        thread.start()

    def _receive(self, wakes: WakeRelay | None, hub: LiveHub | None) -> None:
        while True:
            try:
                data = self._inbox.recv(MAX_DATAGRAM)
            except OSError:  # closed: the process is stopping
                return
            if not data:  # shut down (close)
                return
            payload = data.decode()
            if payload.startswith(WAKE):
                if wakes is not None:
                    wakes.wake(datetime.fromisoformat(json.loads(payload)["wake"]))
                continue
            if hub is None:
                continue
            change = read_change(payload)
            if change is None:
                hub.look()
            else:
                hub.hand(*change)

    def wake(self, at: datetime) -> None:
        """Work is due at ``at``: tell the engine's worker (the Waker of a worker without it)."""
        self._send(json.dumps({"wake": at.isoformat()}))

    def _send(self, payload: str) -> None:
        data = payload.encode()
        for other in self._others:
            with contextlib.suppress(OSError):  # full, or not (or no longer) there
                self._out.sendto(data, other)

    def committed(self) -> None:
        """Tell the other workers that entries may have been committed."""
        self._send(NEW_ENTRIES)

    def changed(self, account_id: str, change: InboxChange) -> None:
        """Tell the other workers of a read, a dismissal or a withdrawal."""
        for payload in change_payloads(account_id, change):
            self._send(payload)

    def close(self) -> None:
        """Stop receiving."""
        with contextlib.suppress(OSError):
            self._inbox.shutdown(socket.SHUT_RDWR)
        self._inbox.close()
        self._out.close()
