"""How `pushctl serve` runs uvicorn: its options from Settings, and what uvicorn leaves
unbounded: the size of request heads, the time a client may stall, the connections open.

uvicorn[standard] installs httptools, and uvicorn then prefers it to h11; but
httptools reads a request head of any size (one 64 MiB header held the event
loop for seconds, unauthenticated), and uvicorn's only head limit
(``h11_max_incomplete_event_size``) is h11's. Rather than give up the faster
parser, the protocol counts the bytes of each head before the parser sees them
and closes the connection past API.md's 16 KiB.

uvicorn has no timeout for a request head or body either (only one for idle
keep-alive connections, armed after a response): a connection that sends half
a head waits for ever. So each connection has one timer, for what it waits on
its client for: the rest of a head (PUSHCORE_HTTP_HEAD_TIMEOUT, from the
connection's opening or the head's first byte), more of a body
(PUSHCORE_HTTP_BODY_TIMEOUT since the last byte), the next request
(uvicorn's keep-alive, 5 s). Past it the connection is closed. And the number
of connections is bounded (:mod:`pushcore_http.connections`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

import attrs
from starlette.applications import Starlette

from pushcore.config import Settings
from pushcore_http.connections import (
    HOLD_EXTENSION,
    Connections,
    Phase,
    channel_bound,
    connection_bound,
    open_files_limit,
)

MAX_HEAD_BYTES = 16 * 1024
"""Request line and headers of one request, in all (API.md, "Limits and fairness")."""

STOP_GRACE = 3
"""Seconds a stop waits for the requests in flight (uvicorn's whole seconds)."""

log = logging.getLogger("pushcore.http")

_REFUSAL_BODY = b'{"error":"Request headers too large","code":"request_headers_too_large"}'
REFUSAL = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
    b"content-type: application/json\r\n"
    b"content-length: " + str(len(_REFUSAL_BODY)).encode() + b"\r\n"
    b"connection: close\r\n\r\n" + _REFUSAL_BODY
)
HEAD_TIMEOUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
_BUSY_BODY = b'{"error":"Too many open connections","code":"unavailable"}'
BUSY_REFUSAL = (
    b"HTTP/1.1 503 Service Unavailable\r\n"
    b"content-type: application/json\r\n"
    b"retry-after: 1\r\n"
    b"content-length: " + str(len(_BUSY_BODY)).encode() + b"\r\n"
    b"connection: close\r\n\r\n" + _BUSY_BODY
)


def http_protocol(settings: Settings, bound: int | None = None) -> type[asyncio.Protocol] | str:
    """The HTTP/1.1 protocol class for uvicorn: httptools with the head limit, the
    timeouts and the connection bound of ``settings``, or h11 without httptools (which
    enforces the head limit itself, see :func:`server_options`, but nothing else)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # uvicorn without [standard]
        return "h11"

    if bound is None:
        bound = connection_bound(open_files_limit(), settings.http_max_connections)
    connections = Connections(bound)
    head_timeout = settings.http_head_timeout.total_seconds()
    body_timeout = settings.http_body_timeout.total_seconds()
    write_timeout = settings.http_write_timeout.total_seconds()

    class GuardedHttpTools(HttpToolsProtocol):
        """httptools, refusing a request whose head passes MAX_HEAD_BYTES (a 431 and the
        connection closed, without reading or parsing the rest), closing a connection
        whose client stalls, and keeping the number of connections bounded."""

        # Bytes of the current head so far; None while a body is read (the head limit is
        # not the body's). Counted per read, not per byte: a head that begins inside the
        # read that ended the previous request (pipelining) is counted from the next
        # read on, so it can pass the limit by at most that one read (64-256 KiB).
        _head_bytes: int | None = 0
        _phase = Phase.HEAD
        # When the client last made progress in this phase (the loop's clock), and when
        # that last moved the connection in the bound's order.
        _since = 0.0
        _ordered = 0.0
        # One timer per connection, re-armed only when a phase needs it sooner: a
        # phase change is an assignment, not a loop call.
        _timer: asyncio.TimerHandle | None = None
        _timer_at = 0.0
        # While the transport's buffer is full: a timer, and the bytes then waiting.
        _write_timer: asyncio.TimerHandle | None = None
        _unsent = 0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            # Seconds each phase may wait on the client; None: the server is working.
            self._limits = (float(self.timeout_keep_alive), head_timeout, body_timeout, None)
            self._enter(Phase.HEAD)
            if not connections.admit(self):
                self.transport.write(BUSY_REFUSAL)
                self.transport.close()

        def connection_lost(self, exc: Exception | None) -> None:
            connections.forget(self)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._stop_write_timer()
            super().connection_lost(exc)

        def pause_writing(self) -> None:
            super().pause_writing()
            self._unsent = self.transport.get_write_buffer_size()
            self._stop_write_timer()
            self._write_timer = self.loop.call_later(write_timeout, self._write_stalled)

        def resume_writing(self) -> None:
            self._stop_write_timer()
            super().resume_writing()

        def _stop_write_timer(self) -> None:
            if self._write_timer is not None:
                self._write_timer.cancel()
                self._write_timer = None

        def _write_stalled(self) -> None:
            # The client took nothing for write_timeout (a live channel's reader that
            # stopped reading, say): aborted, as close() would wait for the buffer to go.
            self._write_timer = None
            if self.transport.is_closing():
                return
            unsent = self.transport.get_write_buffer_size()
            if unsent < self._unsent:  # it took some: slow, not stalled
                self._unsent = unsent
                self._write_timer = self.loop.call_later(write_timeout, self._write_stalled)
                return
            log.debug("closed a connection whose client read nothing for %.0f s", write_timeout)
            connections.forget(self)
            self.transport.abort()

        def data_received(self, data: bytes) -> None:
            if self._phase is Phase.IDLE:
                self._enter(Phase.HEAD)
            elif self._phase is Phase.BODY:
                self._progress()
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
            self._enter(Phase.BODY)
            # The rate limiter marks a request it holds for a 429 through this.
            self.scope["extensions"] = {HOLD_EXTENSION: {"hold": self._hold}}
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            answered = self.cycle.response_complete
            super().on_message_complete()
            self._head_bytes = 0
            self._enter(Phase.IDLE if answered else Phase.BUSY)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            connections.release(self)
            if self.transport.is_closing():
                return
            # The latest request parsed: this one, or a pipelined one now started.
            cycle = self.cycle
            if cycle.more_body:  # the rest of its body is still to come
                self._enter(Phase.BODY)
            elif not cycle.response_complete:
                self._enter(Phase.BUSY)
            else:  # waiting for the next request, or for the rest of its head
                self._enter(Phase.HEAD if self._head_bytes else Phase.IDLE)

        def handle_websocket_upgrade(self) -> None:
            # The connection becomes another protocol's: no timer or bound of ours.
            connections.forget(self)
            self._phase = Phase.BUSY
            super().handle_websocket_upgrade()

        def close_for_bound(self) -> None:
            log.debug("closed a connection for the bound (%s, %s)", self._phase.name, self.client)
            self.transport.close()

        def _hold(self) -> None:
            connections.hold(self)

        def _enter(self, phase: Phase) -> None:
            self._phase = phase
            limit = self._limits[phase]
            if limit is None:
                connections.busy(self)
                return
            now = self.loop.time()
            self._since = self._ordered = now
            connections.waiting(self)
            if self._timer is None or now + limit < self._timer_at:
                self._arm(now + limit)

        def _progress(self) -> None:
            now = self.loop.time()
            self._since = now
            # Reordered at most once a second: an upload's every read is no dict work.
            if now - self._ordered >= 1.0:
                self._ordered = now
                connections.waiting(self)

        def _arm(self, when: float) -> None:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self.loop.call_at(when, self._expire)
            self._timer_at = when

        def _expire(self) -> None:
            self._timer = None
            limit = self._limits[self._phase]
            if limit is None or self.transport.is_closing():
                return
            now = self.loop.time()
            if self._phase is Phase.BODY and self.flow.read_paused:
                # Not reading (the app has not taken what came): no stall of the client's.
                self._since = now
            due = self._since + limit
            if now < due:
                self._arm(due)
                return
            # Part of a head came, and nothing is being answered: say why.
            answering = self.cycle is not None and not self.cycle.response_complete
            if self._phase is Phase.HEAD and self._head_bytes and not answering:
                self.transport.write(HEAD_TIMEOUT)
            log.debug("closed a connection stalled in %s after %.0f s", self._phase.name, limit)
            connections.forget(self)
            self.transport.close()

        def _refuse(self) -> None:
            # A response still being written for an earlier (pipelined) request
            # must not be interleaved with ours: then the close alone refuses.
            if self.cycle is None or self.cycle.response_complete:
                self.transport.write(REFUSAL)
            log.debug("refused a request head over %d bytes from %s", MAX_HEAD_BYTES, self.client)
            self.transport.close()

    return GuardedHttpTools


def serve(app: Starlette, settings: Settings, sock: socket.socket, *, host: str) -> None:
    """Serve ``app`` (from :func:`pushcore_http.create_app`) on the bound ``sock`` until
    SIGINT or SIGTERM."""
    import uvicorn

    services = app.state.services
    bound = connection_bound(open_files_limit(), settings.http_max_connections)
    # Channels never take the slots other requests need (API.md, "People-side limits").
    channels = channel_bound(bound, settings.live_max_channels)
    services.live.limits = attrs.evolve(services.live.limits, channels=channels)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, **server_options(settings, host=host, port=port, bound=bound))

    class Server(uvicorn.Server):
        """uvicorn's server, ending the open live channels as its stop begins: uvicorn
        waits for every response to end, and a channel's would not (API.md: end them at
        once, finish the requests in flight, exit within 5 s)."""

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            services.live.end_all("shutdown")
            # The engine's grace runs beside the requests' (the lifespan waits for
            # the same stop): one after the other they could pass the 5 s.
            engine = getattr(app.state, "engine", None)
            stopping = None if engine is None else asyncio.ensure_future(engine.stop())
            await super().shutdown(sockets)
            if stopping is not None:
                await stopping

    Server(config).run(sockets=[sock])


def server_options(
    settings: Settings, *, host: str, port: int, bound: int | None = None
) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` / ``uvicorn.Config`` serving on host:port
    (``bound``: the client connections open at once, derived when None)."""
    return {
        "host": host,
        "port": port,
        "log_level": settings.log_level.lower(),
        "lifespan": "on",
        "http": http_protocol(settings, bound),
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
        # A log line per request costs more than many requests do; off unless asked for.
        "access_log": settings.access_log,
        # At a stop, requests still running after this are cancelled: with the engine's
        # own stop and the store's close after it, the process exits within 5 s.
        "timeout_graceful_shutdown": STOP_GRACE,
    }
