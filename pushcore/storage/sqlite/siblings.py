"""The workers of one `pushctl serve --workers N` on SQLite, telling each other of inbox news.

SQLite's counterpart of pushcore.storage.postgres.listen: on PostgreSQL every
process hears of another's new entries, reads and dismissals through
LISTEN/NOTIFY. SQLite has no such thing: new entries are found by each hub's poll of the latest
entry's number, but a read or a dismissal leaves no number to poll for. So
the workers of one command, which share a machine, send each other a
datagram for each: every worker binds a Unix datagram socket in a directory
the command made for them, and its hub's :attr:`~pushcore.live.LiveHub.tell`
sends what this process's services report to the other workers' sockets,
where a thread hands it to their hubs (:meth:`LiveHub.look`,
:meth:`LiveHub.hand`, which tell nobody further). A datagram that cannot be
sent at once (the other worker's buffer full, or it is gone) is dropped: new
entries are still found by the poll; a lost read or dismissal reaches that
worker's channels only through their clients' next read of the inbox.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from pathlib import Path

from pushcore.domain.inbox import InboxChange
from pushcore.live.hub import LiveHub
from pushcore.storage.sql.inbox import change_payloads, read_change

log = logging.getLogger("pushcore.live")

MAX_DATAGRAM = 64 * 1024  # a payload is under 8,000 bytes (change_payloads)
# Not empty: an empty read is the socket shut down. Any payload read_change does not
# read as a change means new entries.
NEW_ENTRIES = "{}"


def socket_path(directory: Path, index: int) -> Path:
    """Where worker ``index`` (0 first) receives."""
    return directory / f"worker-{index + 1}.sock"


class Siblings:
    """This worker's socket, and the other workers' addresses (an InboxSignal to tell)."""

    def __init__(self, directory: Path, index: int, count: int) -> None:
        self._inbox = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._inbox.bind(str(socket_path(directory, index)))
        self._out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self._out.setblocking(False)
        self._others = [str(socket_path(directory, i)) for i in range(count) if i != index]

    def listen(self, hub: LiveHub) -> None:
        """Hand what the other workers send to ``hub``, and tell them what it is told."""
        hub.tell = self
        thread = threading.Thread(
            target=self._receive, args=(hub,), name="pushcore-siblings", daemon=True
        )
        thread.start()

    def _receive(self, hub: LiveHub) -> None:
        while True:
            try:
                data = self._inbox.recv(MAX_DATAGRAM)
            except OSError:  # closed: the process is stopping
                return
            if not data:  # shut down (close)
                return
            change = read_change(data.decode())
            if change is None:
                hub.look()
            else:
                hub.hand(*change)

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
