"""A host that accepts connections and never answers: a webhook receiver that hangs.

Each connection is accepted and read from (so the sender's request is sent in
full), and kept open with no answer until the black hole closes.
"""

from __future__ import annotations

import selectors
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class BlackHole:
    """Listens on a loopback port; counts what it accepted; answers nothing."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=1024)
        self._listener.setblocking(False)
        self.port: int = self._listener.getsockname()[1]
        self.accepted = 0
        self._open: list[socket.socket] = []
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="blackhole", daemon=True)

    def url(self, path: str = "/hook") -> str:
        """A URL on this host."""
        return f"http://127.0.0.1:{self.port}{path}"

    def _run(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=0.1):
                sock = key.fileobj
                assert isinstance(sock, socket.socket)
                if sock is self._listener:
                    try:
                        conn, _ = self._listener.accept()
                    except BlockingIOError:
                        continue
                    conn.setblocking(False)
                    self.accepted += 1
                    self._open.append(conn)
                    self._selector.register(conn, selectors.EVENT_READ)
                    continue
                try:
                    data = sock.recv(65536)
                except (BlockingIOError, ConnectionError):
                    data = b"x"
                if not data:  # the sender gave up: forget the connection
                    self._selector.unregister(sock)
                    self._open.remove(sock)
                    sock.close()

    def close(self) -> None:
        """Stop listening and drop every connection."""
        self._stop.set()
        self._thread.join(5)
        for conn in self._open:
            conn.close()
        self._listener.close()
        self._selector.close()


@contextmanager
def black_hole() -> Iterator[BlackHole]:
    """A black hole for the block's duration."""
    hole = BlackHole()
    hole._thread.start()
    try:
        yield hole
    finally:
        hole.close()
