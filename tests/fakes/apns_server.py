"""A fake APNs: the provider API over HTTP/2 and TLS on loopback, as strict as Apple.

A background thread runs its own event loop with ``h2`` (ALPN h2; a trustme
certificate for ``localhost`` and ``127.0.0.1``). Each request is checked as
APNs checks it: the ES256 provider token against the public half of the .p8
key (alg, kid, iss, iat at most an hour old), apns-topic, apns-push-type,
apns-priority (5 or 10), apns-id (a UUID), the path ``/3/device/<hex>`` and a
JSON payload of at most 4096 bytes. Failures get Apple's status and reason and
are listed in ``rejected``; the rest are recorded in ``requests`` and answered
200 unless scripted. Knobs: scripted answers per token, a response delay,
GOAWAY (now or after N streams), and SETTINGS_MAX_CONCURRENT_STREAMS.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import threading
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import attrs
import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings
import trustme
from cryptography.hazmat.primitives import serialization
from hpack import HeaderTuple, NeverIndexedHeaderTuple
from hyperframe.frame import GoAwayFrame
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey

from pushcore.gateways.http2 import CountedH2Connection, HeaderEncoder
from pushcore.ports import Clock

_PATH = re.compile(r"/3/device/([^/]*)")
_HEX = re.compile(r"[0-9A-Fa-f]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_PUSH_TYPES = frozenset({"alert", "background", "location", "voip", "complication", "fileprovider",
                         "mdm", "liveactivity", "pushtotalk"})  # fmt: skip


@attrs.frozen
class Answer:
    """What the fake answers for one request."""

    status: int = 200
    reason: str | None = None
    retry_after: str | None = None


@attrs.frozen
class ApnsRequest:
    """One request that passed every check, as received, with the answer given."""

    token: str
    headers: Mapping[str, str]
    payload: dict[str, Any]
    jwt_header: Mapping[str, Any]
    claims: Mapping[str, Any]
    at: datetime  # the fake's clock when the request was complete
    connection: int  # which connection (1, 2, ... in order of acceptance)
    stream_id: int
    answer: Answer


@attrs.frozen
class Rejected:
    """A request APNs would refuse: Apple's reason and the request's headers."""

    reason: str
    headers: Mapping[str, str]


class FakeApns:
    """The fake server. Use :func:`running_apns`, or ``start`` and ``stop``."""

    def __init__(
        self,
        *,
        key_pem: bytes,
        key_id: str,
        team_id: str,
        topic: str,
        clock: Clock | None = None,
        max_concurrent_streams: int = 1000,
        initial_window_size: int = 65535,
        strict_h2: bool = True,
    ) -> None:
        private = serialization.load_pem_private_key(key_pem, password=None)
        public = private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self._public = ECKey.import_key(public)
        self.key_id = key_id
        self.team_id = team_id
        self.topic = topic
        self._clock = clock
        self.max_concurrent_streams = max_concurrent_streams
        self.initial_window_size = initial_window_size
        # h2's own checks of every received header (names, pseudo-headers,
        # characters): on for tests; the throughput benchmark turns them off,
        # as they cost the fake more CPU than the rest of a request.
        self.strict_h2 = strict_h2
        self.ca = trustme.CA()
        self.delay = 0.0  # seconds before each answer
        self.goaway_after: int | None = None  # GOAWAY once a connection has had N streams
        self.requests: list[ApnsRequest] = []
        self.rejected: list[Rejected] = []
        self.protocol_errors: list[str] = []
        self.connections = 0
        self.settings_acks = 0  # SETTINGS frames the clients acknowledged (applied)
        self.peak_streams = 0  # most streams open at once on one connection
        self._lower_after: tuple[int, int] | None = None
        self._scripts: defaultdict[str, deque[Answer]] = defaultdict(deque)
        self._verified: dict[str, tuple[dict[str, Any], dict[str, Any]] | str] = {}
        self._live: set[_Conn] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """The base URL to give the gateway (PUSHCORE_APNS_URL)."""
        return f"https://127.0.0.1:{self.port}"

    def client_context(self) -> ssl.SSLContext:
        """A client TLS context trusting this fake's CA (PUSHCORE_CA_FILE's role)."""
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return context

    @property
    def provider_tokens(self) -> list[str]:
        """The distinct provider tokens seen, in order of first use."""
        return list(dict.fromkeys(r.headers["authorization"] for r in self.requests))

    def counts(self) -> dict[str, float]:
        """Accepted and rejected requests, and the first and last acceptance times (epoch s)."""
        # Requests are appended as they are accepted: the first and last are the ends.
        requests = self.requests
        return {
            "accepted": len(requests),
            "rejected": len(self.rejected),
            "first": requests[0].at.timestamp() if requests else 0.0,
            "last": requests[-1].at.timestamp() if requests else 0.0,
        }

    def now(self) -> datetime:
        """The fake's time: its clock's, or the real one."""
        return self._clock.now() if self._clock is not None else datetime.now(UTC)

    def script(self, token: str, *answers: Answer) -> None:
        """Answer the next requests for ``token`` with ``answers``, in order (then 200)."""
        self._scripts[token].extend(answers)

    def set_max_concurrent_streams(self, limit: int, *, after: int | None = None) -> None:
        """Advertise ``limit`` from now on, or on each connection once it has had ``after``
        streams."""
        if after is not None:
            self._lower_after = (after, limit)
        else:
            self.max_concurrent_streams = limit
            self._each(lambda conn: conn.settings(limit))

    def goaway(self) -> None:
        """Send GOAWAY on every open connection now (answering the streams it has)."""
        self._each(lambda conn: conn.send_goaway())

    def drop_connections(self) -> None:
        """Cut every open connection at once, as a network failure would."""
        self._each(lambda conn: conn.transport.abort())

    def _each(self, action: Callable[[_Conn], None]) -> None:
        # From the test's thread into the fake's loop.
        def run() -> None:
            for conn in list(self._live):
                action(conn)

        if self._loop is not None:
            self._loop.call_soon_threadsafe(run)

    def start(self) -> None:
        """Listen on 127.0.0.1, port 0, in a background thread."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
        context.set_alpn_protocols(["h2"])
        ready = threading.Event()
        loop = asyncio.new_event_loop()
        self._loop = loop

        def run() -> None:
            asyncio.set_event_loop(loop)
            create = loop.create_server(lambda: _Conn(self), "127.0.0.1", 0, ssl=context)
            self._server = loop.run_until_complete(create)
            self.port = self._server.sockets[0].getsockname()[1]
            ready.set()
            loop.run_forever()

        self._thread = threading.Thread(target=run, name="fake-apns", daemon=True)
        self._thread.start()
        ready.wait(10)

    def stop(self) -> None:
        """Drop every connection and stop the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return

        def halt() -> None:
            if self._server is not None:
                self._server.close()
            for conn in list(self._live):
                conn.transport.abort()
            loop.call_soon(loop.stop)

        loop.call_soon_threadsafe(halt)
        thread.join(10)
        loop.close()
        self._loop = self._thread = None

    def _check_jwt(self, authorization: str | None) -> tuple[dict[str, Any], dict[str, Any]] | str:
        if not authorization:
            return "MissingProviderToken"
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token:
            return "InvalidProviderToken"
        checked = self._verified.get(token)
        if checked is None:
            # Verifying an ES256 signature is the costliest check: once per token.
            checked = self._verify(token)
            self._verified[token] = checked
        if isinstance(checked, str):
            return checked
        age = self.now().timestamp() - checked[1]["iat"]
        if age > 3600:
            return "ExpiredProviderToken"
        if age < -60:
            return "InvalidProviderToken"
        return checked

    def _verify(self, token: str) -> tuple[dict[str, Any], dict[str, Any]] | str:
        try:
            decoded = jwt.decode(token, self._public, algorithms=["ES256"])
        except (JoseError, ValueError):
            return "InvalidProviderToken"
        header, claims = dict(decoded.header), dict(decoded.claims)
        valid = (
            header.get("alg") == "ES256"
            and header.get("kid") == self.key_id
            and claims.get("iss") == self.team_id
            and isinstance(claims.get("iat"), int)
        )
        return (header, claims) if valid else "InvalidProviderToken"

    def handle(self, headers: dict[str, str], body: bytes, conn: int, stream_id: int) -> Answer:
        """Check a complete request like APNs does; record it; the answer to give."""
        checked = self._check_request(headers, body)
        if isinstance(checked, Answer):
            self.rejected.append(Rejected(checked.reason or "", headers))
            return checked
        token, payload, (jwt_header, claims) = checked
        queue = self._scripts.get(token)
        answer = queue.popleft() if queue else Answer()
        self.requests.append(
            ApnsRequest(token, headers, payload, jwt_header, claims, self.now(), conn, stream_id,
                        answer)
        )  # fmt: skip
        return answer

    def _check_request(
        self, headers: dict[str, str], body: bytes
    ) -> Answer | tuple[str, dict[str, Any], tuple[dict[str, Any], dict[str, Any]]]:
        if headers.get(":method") != "POST":
            return Answer(405, "MethodNotAllowed")
        match = _PATH.fullmatch(headers.get(":path", ""))
        if match is None:
            return Answer(404, "BadPath")
        token = match.group(1)
        if not token:
            return Answer(400, "MissingDeviceToken")
        if not _HEX.fullmatch(token):
            return Answer(400, "BadDeviceToken")
        checked_jwt = self._check_jwt(headers.get("authorization"))
        if isinstance(checked_jwt, str):
            return Answer(403, checked_jwt)
        refused = self._check_headers(headers)
        if refused is not None:
            return refused
        if not body:
            return Answer(400, "PayloadEmpty")
        if len(body) > 4096:
            return Answer(413, "PayloadTooLarge")
        try:
            payload = json.loads(body)
        except ValueError:
            return Answer(400, "BadPayload")
        if not isinstance(payload, dict) or not isinstance(payload.get("aps"), dict):
            return Answer(400, "BadPayload")
        return token, payload, checked_jwt

    def _check_headers(self, headers: dict[str, str]) -> Answer | None:
        topic = headers.get("apns-topic")
        refusals = [
            (not topic, "MissingTopic"),
            (topic != self.topic, "TopicDisallowed"),
            (headers.get("apns-push-type") not in _PUSH_TYPES, "InvalidPushType"),
            (headers.get("apns-priority") not in ("5", "10"), "BadPriority"),
            (not _UUID.fullmatch(headers.get("apns-id", "")), "BadMessageId"),
            (not headers.get("apns-expiration", "0").isdigit(), "BadExpirationDate"),
        ]
        return next((Answer(400, reason) for refused, reason in refusals if refused), None)


class _ServerH2(CountedH2Connection):
    # As the client does: _Conn keeps the count of open streams.
    @property
    def open_inbound_streams(self) -> int:
        return self.open_now


class _Conn(asyncio.Protocol):
    """One client connection: h2 on the server side, writes batched per read."""

    def __init__(self, server: FakeApns) -> None:
        self.server = server
        self.h2 = _ServerH2(
            h2.config.H2Configuration(
                client_side=False,
                header_encoding=None,
                validate_inbound_headers=server.strict_h2,
            )
        )
        # Cheaper for both sides than Huffman-coded literals (see HeaderEncoder).
        self.h2.encoder = HeaderEncoder()
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.number = 0
        self.incoming: dict[int, tuple[list[tuple[bytes, bytes]], bytearray]] = {}
        self.unanswered: set[int] = set()  # streams received and not yet answered
        self.received = 0
        self.goaway_last: int | None = None
        self.highest_started = 0
        self.lowered = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        server = self.server
        server.connections += 1
        self.number = server.connections
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.selected_alpn_protocol() != "h2":
            server.protocol_errors.append("client did not negotiate ALPN h2")
            transport.close()
            return
        server._live.add(self)
        self.h2.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: server.max_concurrent_streams,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: server.initial_window_size,
            },
        )
        self.h2.initiate_connection()
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.server._live.discard(self)

    def flush(self) -> None:
        data = self.h2.data_to_send()
        if data and not self.transport.is_closing():
            self.transport.write(data)

    def settings(self, limit: int) -> None:
        self.h2.update_settings({h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: limit})
        self.flush()

    def send_goaway(self) -> None:
        """GOAWAY with the last stream received, written by hand: h2 would stop
        sending anything after its own, but the streams below it must be answered."""
        if self.goaway_last is not None:
            return
        # The last stream whose request this connection has seen, not h2's
        # highest_inbound_stream_id: h2 may have parsed more frames of this
        # read than the events handled so far.
        self.goaway_last = self.highest_started
        frame = GoAwayFrame(0)
        frame.last_stream_id = self.goaway_last
        frame.additional_data = b"fake-apns: going away"
        self.flush()
        self.transport.write(frame.serialize())
        self.close_if_done()

    def close_if_done(self) -> None:
        last = self.goaway_last
        if last is not None and all(sid > last for sid in self.unanswered):
            self.flush()
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        self.h2.open_now = len(self.unanswered)
        try:
            events = self.h2.receive_data(data)
        except h2.exceptions.ProtocolError as exc:
            self.server.protocol_errors.append(f"connection {self.number}: {exc}")
            self.flush()
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.started(event.stream_id or 0, list(event.headers or ()))
            elif isinstance(event, h2.events.DataReceived):
                sid = event.stream_id or 0
                self.h2.acknowledge_received_data(event.flow_controlled_length or 0, sid)
                if sid in self.incoming:
                    self.incoming[sid][1].extend(event.data or b"")
            elif isinstance(event, h2.events.StreamEnded):
                self.ended(event.stream_id or 0)
            elif isinstance(event, h2.events.StreamReset):
                self.incoming.pop(event.stream_id or 0, None)
                self.unanswered.discard(event.stream_id or 0)
                self.h2.forget(event.stream_id or 0)
                self.h2.open_now = len(self.unanswered)
            elif isinstance(event, h2.events.SettingsAcknowledged):
                self.server.settings_acks += 1
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.transport.close()
                return
        self.flush()

    def started(self, stream_id: int, headers: list[tuple[bytes, bytes]]) -> None:
        self.incoming[stream_id] = (headers, bytearray())
        self.highest_started = max(self.highest_started, stream_id)
        self.unanswered.add(stream_id)
        self.h2.open_now = len(self.unanswered)
        self.server.peak_streams = max(self.server.peak_streams, len(self.unanswered))

    def ended(self, stream_id: int) -> None:
        server = self.server
        if self.goaway_last is not None and stream_id > self.goaway_last:
            # Not processed (the client learns it from GOAWAY's last_stream_id).
            self.incoming.pop(stream_id, None)
            self.unanswered.discard(stream_id)
            return
        raw, body = self.incoming.pop(stream_id)
        try:
            headers = {name.decode(): value.decode() for name, value in raw}
        except UnicodeDecodeError:
            headers = {}
        self.received += 1
        if not headers:
            answer = Answer(400, "BadHeaders")
            server.rejected.append(Rejected("BadHeaders", headers))
        elif len(headers) < len(raw):
            answer = Answer(400, "DuplicateHeaders")
            server.rejected.append(Rejected("DuplicateHeaders", headers))
        else:
            answer = server.handle(headers, bytes(body), self.number, stream_id)
        if server.goaway_after is not None and self.received == server.goaway_after:
            # Before this stream's answer, so answers follow a GOAWAY, as they may.
            self.send_goaway()
        lower = server._lower_after
        if lower is not None and not self.lowered and self.received >= lower[0]:
            self.lowered = True
            self.settings(lower[1])
        # APNs echoes the request's apns-id (or makes one up).
        apns_id = headers.get("apns-id") or str(uuid.uuid4())
        if server.delay > 0:
            loop = asyncio.get_running_loop()
            loop.call_later(server.delay, self.answer, stream_id, answer, apns_id)
        else:
            self.answer(stream_id, answer, apns_id, flush=False)

    def answer(self, stream_id: int, answer: Answer, apns_id: str, flush: bool = True) -> None:
        if self.transport.is_closing() or stream_id not in self.unanswered:
            return
        self.unanswered.discard(stream_id)
        # The id is new every time: never indexed, so HPACK's table holds still.
        headers: list[HeaderTuple | tuple[str, str]] = [
            (":status", str(answer.status)),
            NeverIndexedHeaderTuple("apns-id", apns_id),
        ]
        if answer.retry_after is not None:
            headers.append(("retry-after", answer.retry_after))
        try:
            if answer.status == 200:
                self.h2.send_headers(stream_id, headers, end_stream=True)
            else:
                reply: dict[str, Any] = {"reason": answer.reason or ""}
                if answer.status == 410:
                    reply["timestamp"] = int(self.server.now().timestamp() * 1000)
                self.h2.send_headers(stream_id, headers)
                self.h2.send_data(stream_id, json.dumps(reply).encode(), end_stream=True)
        except h2.exceptions.StreamClosedError:
            pass  # the client reset it (it gave up waiting)
        self.h2.forget(stream_id)
        self.h2.open_now = len(self.unanswered)
        if flush:
            self.flush()
        self.close_if_done()


@contextmanager
def running_apns(**options: Any) -> Iterator[FakeApns]:
    """A started :class:`FakeApns` (``options`` go to its constructor), stopped afterwards."""
    fake = FakeApns(**options)
    fake.start()
    try:
        yield fake
    finally:
        fake.stop()
