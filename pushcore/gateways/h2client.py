"""A small HTTP/2 client on the ``h2`` library and asyncio streams, made for APNs.

Written by hand because httpx's HTTP/2 reached only about 470 pushes a second
on this project's machine. Here the requests submitted in one event-loop turn
go out together: a writer task per connection opens as many streams as the
server's SETTINGS_MAX_CONCURRENT_STREAMS allows (following its changes),
pushes bodies as far as the flow-control windows allow, and writes them in
one go; a reader task turns frames into responses.

After a GOAWAY a connection opens no new streams; requests the server did not
process (above GOAWAY's last_stream_id, REFUSED_STREAM, or never sent) go out
again on another connection. A request whose connection dies in flight has
an unknown fate: :class:`ConnectionLost`.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from hpack import Encoder, HeaderTuple, NeverIndexedHeaderTuple
from hpack.hpack import encode_integer
from hpack.table import HeaderTable
from hyperframe.frame import Frame, GoAwayFrame

Header = tuple[bytes, bytes]

READ_SIZE = 256 * 1024
# Our SETTINGS: no server push. Not MAX_CONCURRENT_STREAMS 0 as well: h2 checks
# that limit for any HEADERS on a stream it no longer holds, so an answer that
# crosses our reset of a timed-out stream would be taken for a stream the
# server opened, and kill the connection with every request on it.
LOCAL_SETTINGS = {h2.settings.SettingCodes.ENABLE_PUSH: 0}
# Streams opened per write: many requests per write, yet the server starts on
# a big batch before all of it is encoded.
WRITE_STREAMS = 100
# Moves of a request to another connection (the server did not process it):
# bounded, so that a flapping server cannot keep it looping.
MAX_ROUTES = 4


class H2Error(Exception):
    """A request could not be completed over HTTP/2."""


class Unreachable(H2Error):
    """No HTTP/2 connection to the server could be made; nothing was sent."""


class ConnectionLost(H2Error):
    """The connection or stream failed while the request was in flight: it may have arrived."""


class NotProcessed(H2Error):
    """The server did not process the request (GOAWAY, REFUSED_STREAM): safe to send again."""


@attrs.frozen
class Response:
    """A complete response, with the connection that carried it."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    connection: Connection


class HeaderEncoder(Encoder):
    """HPACK made cheap for many requests with the same headers.

    Literals are never Huffman-coded: in pure Python that was the costliest
    step of a request (about 70 µs of 200), to save some 25 bytes of a path
    and an apns-id. A header found whole in the table encodes to the same
    bytes until the table changes, so those bytes are remembered and reused
    until something is added to it; never-indexed headers (a device's path,
    a unique id) go out as literals without searching the table at all. In
    pure Python the search and the bookkeeping per header were most of the
    cost of a request's headers.
    """

    def __init__(self) -> None:
        super().__init__()
        self._indexed: dict[tuple[bytes, bytes], bytes] = {}
        self._never_prefix: dict[bytes, bytes] = {}

    def encode(self, headers: Any, huffman: bool = False) -> bytes:
        """Encode a header block (bytes names and values), never Huffman-coding."""
        table = self.header_table
        block: list[bytes] = []
        if table.resized:
            block.append(self._encode_table_size_change())
            table.resized = False
            self._indexed.clear()
        cached = self._indexed
        for header in headers:
            name, value = _to_bytes(header[0]), _to_bytes(header[1])
            if isinstance(header, HeaderTuple) and not header.indexable:
                block.append(self._never_indexed(name, value))
                continue
            encoded = cached.get((name, value))
            if encoded is None:
                encoded = self.add((name, value), False, False)
                if encoded[0] & 0x80:
                    # An indexed field: the table did not change.
                    cached[(name, value)] = encoded
                else:
                    # Added to the table: every dynamic index moved.
                    cached.clear()
            block.append(encoded)
        return b"".join(block)

    def _never_indexed(self, name: bytes, value: bytes) -> bytes:
        # RFC 7541 §6.2.3: 0001 + the name's static index (4-bit prefix), or a
        # literal name after index 0; then the value as a literal. The table is
        # untouched, so nothing cached goes stale.
        prefix = self._never_prefix.get(name)
        if prefix is None:
            static = HeaderTable.STATIC_TABLE_MAPPING.get(name)
            if static is not None:
                field = encode_integer(static[0], 4)
                field[0] |= 0x10
                prefix = bytes(field)
            else:
                prefix = b"\x10" + bytes(encode_integer(len(name), 7)) + name
            self._never_prefix[name] = prefix
        return prefix + bytes(encode_integer(len(value), 7)) + value


def _to_bytes(value: bytes | str) -> bytes:
    return value if isinstance(value, bytes) else value.encode("utf-8")


class CountedH2Connection(h2.connection.H2Connection):
    """An h2 connection whose owner keeps the count of open streams.

    h2 counts open streams by walking all of them for every stream opened:
    with a thousand in flight that walk was a quarter of a request's cost.
    The owner knows its count (it never opens or accepts more than the
    limit), sets ``open_now`` before h2 needs it, and drops each closed
    stream as it ends (:meth:`forget`), as h2's walk would have. Subclasses
    answer ``open_outbound_streams`` (a client) or ``open_inbound_streams``
    (a server) from ``open_now``.
    """

    open_now = 0

    def forget(self, stream_id: int) -> None:
        """Drop a closed stream's state, remembering how it closed (as h2 does)."""
        stream = self.streams.get(stream_id)
        if stream is not None and stream.closed:
            del self.streams[stream_id]
            self._closed_streams[stream_id] = stream.closed_by


class _H2(CountedH2Connection):
    # h2 moves the whole connection to CLOSED when a GOAWAY arrives
    # (python-hyper/h2#1181), so answers to streams at or below last_stream_id
    # would raise ProtocolError; RFC 9113 §6.8 says they may still complete.
    # Keep the state, and let Connection refuse to open new streams instead.
    def _receive_goaway_frame(self, frame: GoAwayFrame) -> tuple[list[Frame], list[Any]]:
        state = self.state_machine.state
        frames, events = super()._receive_goaway_frame(frame)
        if state is not h2.connection.ConnectionState.CLOSED:
            self.state_machine.state = state
        return frames, events

    @property
    def open_outbound_streams(self) -> int:
        """Streams opened by us and not yet finished (kept by Connection)."""
        return self.open_now

    @property
    def open_inbound_streams(self) -> int:
        """None: push is off, so the server opens no streams (and h2 need not walk ours)."""
        return 0


class _Request:
    __slots__ = ("body", "chunks", "future", "headers", "offset", "response_headers", "stream_id")

    def __init__(self, headers: list[Header], body: bytes) -> None:
        self.headers = headers
        self.body = body
        self.offset = 0
        self.stream_id = 0
        self.response_headers: list[Header] = []
        self.chunks: list[bytes] = []
        self.future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()


class Connection:
    """One HTTP/2 connection; requests queue until the server's SETTINGS arrive."""

    def __init__(self, host: str, port: int, tls: ssl.SSLContext, connect_timeout: float) -> None:
        config = h2.config.H2Configuration(
            client_side=True,
            header_encoding=None,
            # Our headers are built from constants and validated values, and only
            # :status of an answer is used (parsed defensively): h2's checking
            # and normalising of every header cost more than the rest of a request.
            validate_outbound_headers=False,
            normalize_outbound_headers=False,
            validate_inbound_headers=False,
        )
        self._h2 = _H2(config=config)
        self._h2.encoder = HeaderEncoder()
        self._queue: deque[_Request] = deque()
        self._streams: dict[int, _Request] = {}
        self._sending: deque[_Request] = deque()  # started streams with body left to send
        self._wake = asyncio.Event()
        self._settled = asyncio.Event()  # the server's first SETTINGS arrived
        self._ready = False
        self._draining = False
        self._closed = False
        self._writer: asyncio.StreamWriter | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._start = asyncio.ensure_future(self._connect(host, port, tls, connect_timeout))

    @property
    def usable(self) -> bool:
        """Whether new requests may be given to this connection."""
        return not (self._draining or self._closed)

    @property
    def closed(self) -> bool:
        """Whether the connection is gone."""
        return self._closed

    @property
    def connected(self) -> bool:
        """Whether the connection got going (TLS, ALPN h2 and the server's SETTINGS)."""
        return self._ready

    @property
    def load(self) -> int:
        """Requests queued or in flight here."""
        return len(self._queue) + len(self._streams)

    def submit(self, headers: list[Header], body: bytes) -> asyncio.Future[Response]:
        """Queue a request; the future resolves to its response or fails with an H2Error."""
        request = _Request(headers, body)
        request.future.add_done_callback(lambda _: self._forget(request))
        self._queue.append(request)
        self._wake.set()
        return request.future

    def retire(self) -> None:
        """Take no new requests; close once the ones in flight are answered."""
        if self._closed:
            return
        self._draining = True
        for request in self._queue:
            if not request.future.done():
                request.future.set_exception(NotProcessed("connection retired before sending"))
        self._queue.clear()
        if not self._streams:
            self._shutdown()

    async def _connect(self, host: str, port: int, tls: ssl.SSLContext, timeout: float) -> None:
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=tls, server_hostname=host, limit=READ_SIZE
                )
                self._writer = writer
                ssl_object = writer.get_extra_info("ssl_object")
                if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
                    raise Unreachable(f"{host}:{port} did not agree to HTTP/2 (ALPN h2)")
                if self._closed:
                    # Retired or closed while connecting: nothing will use it.
                    writer.close()
                    return
                self._h2.local_settings = h2.settings.Settings(True, initial_values=LOCAL_SETTINGS)
                self._h2.initiate_connection()
                writer.write(self._h2.data_to_send())
                self._tasks = [
                    asyncio.ensure_future(self._read(reader)),
                    asyncio.ensure_future(self._write(writer)),
                ]
                # Streams are opened only once the server has said how many it
                # takes (APNs starts low and raises the limit later).
                await self._settled.wait()
        except (TimeoutError, OSError, ssl.SSLError, H2Error, h2.exceptions.ProtocolError) as exc:
            reason = f"no HTTP/2 connection within {timeout:g} s" if not str(exc) else exc
            self._fail(exc if isinstance(exc, H2Error) else Unreachable(f"{host}:{port}: {reason}"))
        else:
            if not self._closed:
                self._ready = True
                self._wake.set()

    async def _read(self, reader: asyncio.StreamReader) -> None:
        try:
            while True:
                data = await reader.read(READ_SIZE)
                if not data:
                    self._fail(ConnectionLost("the server closed the connection"))
                    return
                try:
                    events = self._h2.receive_data(data)
                except h2.exceptions.ProtocolError as exc:
                    self._flush_now()
                    self._fail(ConnectionLost(f"HTTP/2 protocol error: {exc}"))
                    return
                for event in events:
                    if self._closed:
                        return
                    self._on_event(event)
                self._wake.set()
        except (OSError, ssl.SSLError) as exc:
            self._fail(ConnectionLost(f"connection failed: {exc}"))

    def _on_event(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.ResponseReceived):
            request = self._streams.get(event.stream_id or 0)
            if request is not None:
                request.response_headers = list(event.headers or ())
        elif isinstance(event, h2.events.DataReceived):
            stream_id = event.stream_id or 0
            self._h2.acknowledge_received_data(event.flow_controlled_length or 0, stream_id)
            request = self._streams.get(stream_id)
            if request is not None and event.data:
                request.chunks.append(event.data)
        elif isinstance(event, h2.events.StreamEnded):
            self._settle(event.stream_id or 0, None)
        elif isinstance(event, h2.events.StreamReset):
            refused = event.error_code == h2.errors.ErrorCodes.REFUSED_STREAM
            error = "stream refused" if refused else f"stream reset ({event.error_code})"
            self._settle(event.stream_id or 0, (NotProcessed if refused else ConnectionLost)(error))
        elif isinstance(event, h2.events.RemoteSettingsChanged):
            self._settled.set()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._settled.set()
            last = event.last_stream_id or 0
            for stream_id in [s for s in self._streams if s > last]:
                self._settle(stream_id, NotProcessed("not processed before GOAWAY"))
            self.retire()

    def _settle(self, stream_id: int, error: H2Error | None) -> None:
        request = self._streams.pop(stream_id, None)
        if request is None:
            return
        if error is None and request.offset < len(request.body):
            # Answered before the whole body went out (a 413, say): stop sending it.
            with contextlib.suppress(h2.exceptions.H2Error):
                self._h2.reset_stream(stream_id, h2.errors.ErrorCodes.NO_ERROR)
        self._h2.forget(stream_id)
        if not request.future.done():
            headers = {
                k.decode("latin-1"): v.decode("latin-1") for k, v in request.response_headers
            }
            status = headers.get(":status", "")
            if error is None and not status.isdigit():
                error = ConnectionLost("response without a valid :status")
            if error is not None:
                request.future.set_exception(error)
            else:
                body = b"".join(request.chunks)
                request.future.set_result(Response(int(status), headers, body, self))
        if self._draining and not self._streams:
            self._shutdown()

    def _forget(self, request: _Request) -> None:
        # A caller gave up (timeout): free its stream so it stops counting
        # against the server's concurrency limit.
        if not request.future.cancelled() or self._closed:
            return
        if self._streams.pop(request.stream_id, None) is not None:
            with contextlib.suppress(h2.exceptions.H2Error):
                self._h2.reset_stream(request.stream_id, h2.errors.ErrorCodes.CANCEL)
            self._h2.forget(request.stream_id)
            self._wake.set()
            if self._draining and not self._streams:
                self._shutdown()

    async def _write(self, writer: asyncio.StreamWriter) -> None:
        try:
            while not self._closed:
                await self._wake.wait()
                self._wake.clear()
                more = self._ready and not self._draining and self._open_streams()
                self._push_bodies()
                data = self._h2.data_to_send()
                if data:
                    writer.write(data)
                    await writer.drain()
                if more:
                    # More to send than one write takes: let the reader (and the
                    # server) work on what went out, then carry on.
                    await asyncio.sleep(0)
                    self._wake.set()
        except (OSError, ssl.SSLError) as exc:
            self._fail(ConnectionLost(f"connection failed: {exc}"))

    def _open_streams(self) -> bool:
        """Open streams for queued requests; whether only the per-write budget stopped it."""
        limit = self._h2.remote_settings.max_concurrent_streams
        budget = WRITE_STREAMS
        while self._queue and len(self._streams) < limit and budget > 0:
            budget -= 1
            request = self._queue.popleft()
            if request.future.done():
                continue
            try:
                stream_id = self._h2.get_next_available_stream_id()
                self._h2.open_now = len(self._streams)
                self._h2.send_headers(stream_id, request.headers, end_stream=not request.body)
            except h2.exceptions.TooManyStreamsError:
                # h2 counted differently (a stream half-closed by a reset): wait for a slot.
                self._queue.appendleft(request)
                return False
            except h2.exceptions.NoAvailableStreamIDError:
                self._queue.appendleft(request)
                self.retire()
                return False
            request.stream_id = stream_id
            self._streams[stream_id] = request
            if request.body:
                self._sending.append(request)
        return bool(self._queue) and len(self._streams) < limit

    def _push_bodies(self) -> None:
        blocked: deque[_Request] = deque()
        frame_size = self._h2.max_outbound_frame_size
        while self._sending:
            request = self._sending.popleft()
            if request.stream_id not in self._streams:
                continue
            body = request.body
            while request.offset < len(body):
                window = self._h2.local_flow_control_window(request.stream_id)
                size = min(len(body) - request.offset, frame_size, window)
                if size <= 0:
                    break
                end = request.offset + size
                self._h2.send_data(
                    request.stream_id, body[request.offset : end], end_stream=end == len(body)
                )
                request.offset = end
            if request.offset < len(body):
                blocked.append(request)
                if self._h2.outbound_flow_control_window <= 0:
                    break  # the connection's window is spent: the rest wait too
        blocked.extend(self._sending)
        self._sending = blocked

    def _flush_now(self) -> None:
        data = self._h2.data_to_send()
        if data and self._writer is not None and not self._writer.is_closing():
            self._writer.write(data)

    def _shutdown(self, error: H2Error | None = None) -> None:
        # Say GOAWAY (politely: we are done, or closing), then close.
        if self._closed:
            return
        with contextlib.suppress(h2.exceptions.H2Error):
            self._h2.close_connection()
        self._flush_now()
        self._fail(error or NotProcessed("connection closed"))

    def _fail(self, error: H2Error) -> None:
        if self._closed:
            return
        self._closed = True
        self._settled.set()
        # Requests that were never sent: another connection may take them, unless
        # this one never got going (then the server is likely unreachable for all).
        never_sent = NotProcessed(str(error)) if self._ready else Unreachable(str(error))
        for request in self._queue:
            if not request.future.done():
                request.future.set_exception(never_sent)
        for request in self._streams.values():
            if not request.future.done():
                request.future.set_exception(error)
        self._queue.clear()
        self._streams.clear()
        self._sending.clear()
        self._wake.set()
        if self._writer is not None:
            self._writer.close()
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()

    async def aclose(self) -> None:
        """Close now; requests still open fail with ConnectionLost."""
        self._shutdown(ConnectionLost("client closed"))
        self._start.cancel()
        await asyncio.gather(self._start, *self._tasks, return_exceptions=True)
        if self._writer is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await self._writer.wait_closed()


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
