"""How `pushctl serve` runs uvicorn: its options from Settings, and a limit on request heads.

uvicorn[standard] installs httptools, and uvicorn then prefers it to h11; but
httptools reads a request head of any size (one 64 MiB header held the event
loop for seconds, unauthenticated), and uvicorn's only head limit
(``h11_max_incomplete_event_size``) is h11's. Rather than give up the faster
parser, :class:`HeadLimitedHttpTools` counts the bytes of each head before
the parser sees them and closes the connection past API.md's 16 KiB.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from pushcore.config import Settings

MAX_HEAD_BYTES = 16 * 1024
"""Request line and headers of one request, in all (API.md, "Limits and fairness")."""

log = logging.getLogger("pushcore.http")

_REFUSAL_BODY = b'{"error":"Request headers too large","code":"request_headers_too_large"}'
REFUSAL = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: application/json\r\n"
    b"content-length: " + str(len(_REFUSAL_BODY)).encode() + b"\r\n"
    b"connection: close\r\n\r\n" + _REFUSAL_BODY
)


def http_protocol() -> type[asyncio.Protocol] | str:
    """The HTTP/1.1 protocol class for uvicorn: httptools with the head limit, or h11
    (which enforces the limit itself, see :func:`server_options`) without httptools."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # uvicorn without [standard]
        return "h11"

    class HeadLimitedHttpTools(HttpToolsProtocol):
        """httptools, refusing a request whose head passes MAX_HEAD_BYTES: a 431 and the
        connection closed, without reading (or parsing) the rest."""

        # Bytes of the current head so far; None while a body is read (the head limit is
        # not the body's). Counted per read, not per byte: a head that begins inside the
        # read that ended the previous request (pipelining) is counted from the next
        # read on, so it can pass the limit by at most that one read (64-256 KiB).
        _head_bytes: int | None = 0

        def data_received(self, data: bytes) -> None:
            if self._head_bytes is None:
                super().data_received(data)
                return
            room = MAX_HEAD_BYTES - self._head_bytes
            if len(data) <= room:
                self._head_bytes += len(data)
                super().data_received(data)
                return
            # Feed what is allowed; the parser's callbacks say whether the head ended.
            self._head_bytes = MAX_HEAD_BYTES
            super().data_received(data[:room])
            if self.transport.is_closing():
                return
            if self._head_bytes == MAX_HEAD_BYTES:
                self._refuse()
            else:
                self.data_received(data[room:])

        def on_headers_complete(self) -> None:
            self._head_bytes = None
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            super().on_message_complete()
            self._head_bytes = 0

        def _refuse(self) -> None:
            # A response still being written for an earlier (pipelined) request
            # must not be interleaved with ours: then the close alone refuses.
            if self.cycle is None or self.cycle.response_complete:
                self.transport.write(REFUSAL)
            log.debug("refused a request head over %d bytes from %s", MAX_HEAD_BYTES, self.client)
            self.transport.close()

    return HeadLimitedHttpTools


def server_options(settings: Settings, *, host: str, port: int) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` / ``uvicorn.Config`` serving on host:port."""
    return {
        "host": host,
        "port": port,
        "log_level": settings.log_level.lower(),
        "lifespan": "on",
        "http": http_protocol(),
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        # A log line per request costs more than many requests do; off unless asked for.
        "access_log": settings.access_log,
    }
