"""The shell of the fake HTTP servers: served from a thread for the length of a block."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import ThreadingHTTPServer


@contextmanager
def serving(server: ThreadingHTTPServer) -> Iterator[None]:
    """Serve ``server`` in a daemon thread until the block ends, then close it."""
    # A short poll interval makes shutdown() quick (the default waits up to 0.5 s).
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
