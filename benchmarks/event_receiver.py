"""A fast event-webhook endpoint for benchmarks, in a process of its own.

Raw asyncio, HTTP/1.1 keep-alive; it notes each request's arrival time,
``webhook-id`` and the answer it gave, and answers at once with the status it
is set to (204 when up, 503 while "down"). Its own process, so the sender's
process shares no interpreter lock with it (a real endpoint is another host).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from multiprocessing.connection import Connection

Arrival = tuple[float, str, int]  # (arrival time, webhook-id, status answered)


class _Protocol(asyncio.Protocol):
    def __init__(self, state: dict[str, int], sink: list[Arrival]) -> None:
        self._state = state
        self._sink = sink
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
            length, event_id = 0, ""
            for line in self._buffer[:head_end].decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                name = name.lower()
                if name == "content-length":
                    length = int(value)
                elif name == "webhook-id":
                    event_id = value.strip()
            end = head_end + 4 + length
            if len(self._buffer) < end:
                return
            self._buffer = self._buffer[end:]
            status = self._state["status"]
            self._sink.append((now, event_id, status))
            reason = b"No Content" if status == 204 else b"Service Unavailable"
            assert self._transport is not None
            self._transport.write(b"HTTP/1.1 %d %s\r\nContent-Length: 0\r\n\r\n" % (status, reason))


def _serve(pipe: Connection) -> None:
    state = {"status": 204}
    sink: list[Arrival] = []

    async def main() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Protocol(state, sink), "127.0.0.1", 0)
        pipe.send(server.sockets[0].getsockname()[1])
        while True:
            await loop.run_in_executor(None, pipe.poll, None)
            command, value = pipe.recv()
            if command == "status":
                state["status"] = value
                pipe.send(None)
            elif command == "count":
                pipe.send(sum(1 for _, _, s in sink if 200 <= s < 300))
            elif command == "arrivals":
                pipe.send(list(sink))
            else:
                server.close()
                return

    asyncio.run(main())


class EventReceiver:
    """The endpoint's process; its methods talk to it over a pipe."""

    def __init__(self) -> None:
        ours, theirs = multiprocessing.get_context("spawn").Pipe()
        self._pipe = ours
        self._process = multiprocessing.get_context("spawn").Process(
            target=_serve, args=(theirs,), daemon=True
        )
        self._process.start()
        self.port: int = self._pipe.recv()
        self.pid: int = self._process.pid or 0

    def url(self) -> str:
        """The endpoint's URL."""
        return f"http://127.0.0.1:{self.port}/events"

    def answer(self, status: int) -> None:
        """Answer every request from now on with ``status``."""
        self._pipe.send(("status", status))
        self._pipe.recv()

    def acknowledged(self) -> int:
        """How many requests got a 2xx so far."""
        self._pipe.send(("count", None))
        return int(self._pipe.recv())

    def arrivals(self) -> list[Arrival]:
        """Every request so far, in arrival order."""
        self._pipe.send(("arrivals", None))
        return list(self._pipe.recv())

    def stop(self) -> None:
        """End the process."""
        self._pipe.send(("stop", None))
        self._process.join(10)
