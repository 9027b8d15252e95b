"""One HTTP/2 connection: a writer task batching requests, a reader task answering them."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections import deque
from collections.abc import Mapping

import attrs
import h2.config
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from pushcore.gateways.http2.encoder import HeaderEncoder
from pushcore.gateways.http2.errors import ConnectionLost, H2Error, NotProcessed, Unreachable
from pushcore.gateways.http2.h2conn import LOCAL_SETTINGS, ClientH2Connection

Header = tuple[bytes, bytes]

READ_SIZE = 256 * 1024
# Streams opened per write: many requests per write, yet the server starts on
# a big batch before all of it is encoded.
WRITE_STREAMS = 100


@attrs.frozen
class Response:
    """A complete response, with the connection that carried it."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    connection: Connection


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
        self._h2 = ClientH2Connection(config=config)
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
