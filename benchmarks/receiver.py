"""A fast webhook receiver for benchmarks: raw asyncio, HTTP/1.1 keep-alive, answers 200.

It records (arrival time, notificationId, scheduledAt) per request, parsing
only what it needs, so it stays far below the server's cost per request.
``delay`` makes it a slow receiver (each answer that many seconds after the
request arrived), and ``None`` one that never answers (a host that hangs).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"


class _Protocol(asyncio.Protocol):
    def __init__(
        self,
        sink: list[tuple[float, str, str]],
        delay: float | None = 0.0,
        bodies: list[dict[str, Any]] | None = None,
    ) -> None:
        self._sink = sink
        self._delay = delay
        self._bodies = bodies
        self._buffer = b""
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport

    def data_received(self, data: bytes) -> None:
        now = time.time()
        self._buffer += data
        while True:
            head_end = self._buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self._buffer[:head_end].decode("latin-1").lower()
            length = 0
            for line in head.split("\r\n"):
                if line.startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            end = head_end + 4 + length
            if len(self._buffer) < end:
                return
            body: dict[str, Any] = json.loads(self._buffer[head_end + 4 : end])
            self._buffer = self._buffer[end:]
            self._sink.append((now, body["notificationId"], body["scheduledAt"]))
            if self._bodies is not None:
                self._bodies.append(body)
            assert self._transport is not None
            if self._delay == 0.0:
                self._transport.write(RESPONSE)
            elif self._delay is not None:
                asyncio.get_running_loop().call_later(self._delay, self._answer)

    def _answer(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.write(RESPONSE)


class BenchReceiver:
    """Runs in its own thread with its own event loop."""

    def __init__(self, delay: float | None = 0.0, *, keep_bodies: bool = False) -> None:
        self.received: list[tuple[float, str, str]] = []
        # Every body as parsed, in arrival order (when asked: it costs memory).
        self.bodies: list[dict[str, Any]] | None = [] if keep_bodies else None
        self._delay = delay
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        server = self._loop.run_until_complete(
            self._loop.create_server(
                lambda: _Protocol(self.received, self._delay, self.bodies), "127.0.0.1", 0
            )
        )
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def start(self) -> BenchReceiver:
        """Start listening; returns self once the port is known."""
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        """Stop the loop."""
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)
