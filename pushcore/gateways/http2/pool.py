"""A few HTTP/2 connections to one origin, and batches of POSTs spread over them."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Sequence

from hpack import NeverIndexedHeaderTuple

from pushcore.gateways.http2.connection import Connection, Header, Response
from pushcore.gateways.http2.errors import H2Error, NotProcessed

# Moves of a request to another connection (the server did not process it):
# bounded, so that a flapping server cannot keep it looping.
MAX_ROUTES = 4


def _load(connection: Connection) -> int:
    return connection.load


class H2Pool:
    """A few HTTP/2 connections to one origin, opened on first use and replaced when lost."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        tls: ssl.SSLContext,
        connections: int = 2,
        connect_timeout: float = 10.0,
    ) -> None:
        self._host = host
        self._port = port
        self._tls = tls
        self._connect_timeout = connect_timeout
        self._slots: list[Connection | None] = [None] * max(1, connections)
        self._retired: set[Connection] = set()  # finishing their last streams
        literal = f"[{host}]" if ":" in host else host
        authority = literal if port == 443 else f"{literal}:{port}"
        self._prefix: list[Header] = [
            (b":method", b"POST"),
            (b":scheme", b"https"),
            (b":authority", authority.encode()),
        ]

    def _refresh(self) -> list[Connection]:
        """The live connections, opening new ones in the slots of any that are gone."""
        self._retired = {c for c in self._retired if not c.closed}
        for index, connection in enumerate(self._slots):
            if connection is None or not connection.usable:
                if connection is not None:
                    self._retired.add(connection)
                self._slots[index] = Connection(
                    self._host, self._port, self._tls, self._connect_timeout
                )
        return [c for c in self._slots if c is not None]

    async def post_many(
        self, requests: Sequence[tuple[str, Sequence[Header], bytes]], timeout: float
    ) -> list[Response | H2Error | TimeoutError]:
        """POST each ``(path, headers, body)``; one result per request, in order.

        Each request goes to the least loaded connection. One the server did
        not process goes out again on another connection (up to MAX_ROUTES
        times, then its result is NotProcessed); one with no answer within
        ``timeout`` seconds gets TimeoutError and its stream is reset. The
        other results are the Response, or Unreachable or ConnectionLost.
        A batch shares one timer and no task per request: per request, those
        cost about as much as its HTTP/2 framing.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        results: list[Response | H2Error | TimeoutError] = [NotProcessed("not processed")] * len(
            requests
        )
        # The path is different for every device: never index it, so that it
        # does not push the constant headers out of the HPACK table.
        headers = [
            [*self._prefix, NeverIndexedHeaderTuple(b":path", path.encode()), *extra]
            for path, extra, _ in requests
        ]
        todo = list(range(len(requests)))
        for _ in range(MAX_ROUTES):
            if not todo or loop.time() >= deadline:
                break  # what is left was never processed: NotProcessed
            live = self._refresh()
            sent: dict[asyncio.Future[Response], tuple[int, Connection]] = {}
            for index in todo:
                connection = min(live, key=_load)
                future = connection.submit(headers[index], requests[index][2])
                sent[future] = (index, connection)
            try:
                done, late = await asyncio.wait(sent, timeout=max(0.0, deadline - loop.time()))
            except asyncio.CancelledError:
                # The sender gave up (the engine stopping): free the streams, as a
                # cancelled request's stream is (Connection._forget).
                for future in sent:
                    future.cancel()
                raise
            todo = []
            for future in done:
                index = sent[future][0]
                error = future.exception()
                if error is None:
                    results[index] = future.result()
                elif isinstance(error, H2Error):
                    results[index] = error
                    if isinstance(error, NotProcessed):
                        todo.append(index)
                else:
                    raise error
            for future in late:
                index, connection = sent[future]
                future.cancel()  # resets its stream (Connection._forget)
                if connection.connected:
                    # A connection that leaves a request unanswered this long is
                    # suspect (a half-dead peer): later requests get a fresh one.
                    # One still connecting is left to its own connect timeout.
                    connection.retire()
                results[index] = TimeoutError(f"no answer within {timeout:g} s")
            todo.sort()
        return results

    async def aclose(self) -> None:
        """Close every connection."""
        connections = [c for c in self._slots if c is not None] + list(self._retired)
        self._slots = [None] * len(self._slots)
        self._retired.clear()
        await asyncio.gather(*(c.aclose() for c in connections), return_exceptions=True)
