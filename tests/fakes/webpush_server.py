"""A Web Push service on loopback that checks what a real one checks, and decrypts
what only the browser could.

It makes subscriptions as a browser would (a P-256 key pair and a 16-byte auth
secret, handed out as base64url ``p256dh`` and ``auth``), and for each POST to
a subscription's endpoint it checks the RFC 8030 headers, verifies the RFC 8292
VAPID token (ES256 against the ``k`` key, ``aud`` its own origin, ``exp`` in
the future and at most 24 h ahead, ``sub`` a contact), decrypts the RFC 8291
``aes128gcm`` body with the subscription's private key and records the JSON.
Anything wrong is answered as a push service would (400, 401, 413) and listed
in ``errors``, so tests can assert there were none.
"""

from __future__ import annotations

import base64
import itertools
import json
import secrets
import socket
import ssl
import struct
import threading
from collections import defaultdict, deque
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import http_ece
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey

from pushcore.ports import Clock
from pushcore.runtime.system import SystemClock

MAX_BODY = 4096
URGENCIES = frozenset({"very-low", "low", "normal", "high"})


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@attrs.frozen(eq=False)
class FakeSubscription:
    """A browser's push subscription: its endpoint and the keys it would give a site."""

    id: str
    endpoint: str
    private_key: ec.EllipticCurvePrivateKey
    auth_secret: bytes

    @property
    def p256dh(self) -> str:
        """The public key, base64url (``keys.p256dh`` in the browser's JSON)."""
        point = self.private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return _b64url(point)

    @property
    def auth(self) -> str:
        """The auth secret, base64url (``keys.auth``)."""
        return _b64url(self.auth_secret)


@attrs.frozen
class PushMessage:
    """One accepted and decrypted push message."""

    subscription_id: str
    headers: dict[str, str]  # lower-case names
    body_size: int
    record_size: int  # the rs field of the aes128gcm header
    sender_key: bytes  # the ephemeral public key from the aes128gcm header
    plaintext: bytes
    payload: dict[str, Any]
    token: str
    jwt_header: dict[str, Any]
    claims: dict[str, Any]
    vapid_key: str  # the ``k`` parameter
    status: int  # what the server answered


class Reject(Exception):
    """The request breaks the protocol: answer ``status`` and list ``reason`` in errors."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@attrs.define
class WebPushServer:
    """Subscriptions, scripted failures per subscription, and what arrived."""

    clock: Clock = attrs.Factory(SystemClock)
    host: str = "127.0.0.1"  # the address it listens on
    name: str | None = None  # the host name in its URLs (default: the address)
    scheme: str = "http"
    port: int = 0
    messages: list[PushMessage] = attrs.Factory(list)
    errors: list[str] = attrs.Factory(list)
    requests: int = 0
    _subscriptions: dict[str, FakeSubscription] = attrs.Factory(dict)
    _gone: set[str] = attrs.Factory(set)
    _script: dict[str, deque[tuple[int, dict[str, str]]]] = attrs.Factory(
        lambda: defaultdict(deque)
    )
    _ids: Iterator[int] = attrs.Factory(lambda: itertools.count(1))
    _lock: threading.Lock = attrs.Factory(threading.Lock)

    @property
    def origin(self) -> str:
        """``scheme://host:port``: what a VAPID ``aud`` for this service must be."""
        host = self.name or self.host
        if ":" in host:
            host = f"[{host}]"
        return f"{self.scheme}://{host}:{self.port}"

    def subscribe(self) -> FakeSubscription:
        """A new subscription, as ``pushManager.subscribe()`` makes one."""
        with self._lock:
            sub_id = f"sub{next(self._ids)}"
            subscription = FakeSubscription(
                id=sub_id,
                endpoint=f"{self.origin}/push/{sub_id}",
                private_key=ec.generate_private_key(ec.SECP256R1()),
                auth_secret=secrets.token_bytes(16),
            )
            self._subscriptions[sub_id] = subscription
        return subscription

    def unsubscribe(self, subscription: FakeSubscription) -> None:
        """The browser dropped the subscription: its endpoint answers 410 from now on."""
        with self._lock:
            self._gone.add(subscription.id)

    def fail(
        self,
        subscription: FakeSubscription,
        status: int,
        times: int = 1,
        retry_after: str | None = None,
    ) -> None:
        """Answer the next ``times`` valid messages to ``subscription`` with ``status``."""
        headers = {} if retry_after is None else {"Retry-After": retry_after}
        with self._lock:
            self._script[subscription.id].extend([(status, headers)] * times)

    def to(self, subscription: FakeSubscription) -> list[PushMessage]:
        """The messages that arrived for ``subscription``."""
        with self._lock:
            return [m for m in self.messages if m.subscription_id == subscription.id]

    def handle(self, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str]]:
        """Answer one POST (``headers`` with lower-case names)."""
        with self._lock:
            self.requests += 1
            sub_id = path.removeprefix("/push/")
            subscription = self._subscriptions.get(sub_id)
            if subscription is None:
                return 404, {}
            if sub_id in self._gone:
                return 410, {}
        try:
            message = self._accept(subscription, headers, body)
        except Reject as rejected:
            with self._lock:
                self.errors.append(f"{rejected.status}: {rejected.reason}")
            return rejected.status, {}
        with self._lock:
            queue = self._script.get(sub_id)
            status, extra = queue.popleft() if queue else (201, {})
            self.messages.append(attrs.evolve(message, status=status))
        if status == 201:
            extra = {"Location": f"{self.origin}/message/{len(self.messages)}"}
        return status, extra

    def _accept(
        self, subscription: FakeSubscription, headers: dict[str, str], body: bytes
    ) -> PushMessage:
        if len(body) > MAX_BODY:
            raise Reject(413, f"body of {len(body)} bytes exceeds {MAX_BODY}")
        ttl = headers.get("ttl", "")
        if not ttl.isdigit():
            raise Reject(400, f"TTL header missing or invalid: {ttl!r}")
        if headers.get("content-encoding") != "aes128gcm":
            raise Reject(400, f"Content-Encoding {headers.get('content-encoding')!r}")
        urgency = headers.get("urgency")
        if urgency is not None and urgency not in URGENCIES:
            raise Reject(400, f"Urgency {urgency!r}")
        token, vapid_key, jwt_header, claims = self._verify_vapid(headers.get("authorization", ""))
        record_size, sender_key, plaintext = _decrypt(subscription, body)
        try:
            payload = json.loads(plaintext.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise Reject(400, f"plaintext is not UTF-8 JSON: {exc}") from None
        return PushMessage(
            subscription_id=subscription.id,
            headers=headers,
            body_size=len(body),
            record_size=record_size,
            sender_key=sender_key,
            plaintext=plaintext,
            payload=payload,
            token=token,
            jwt_header=jwt_header,
            claims=claims,
            vapid_key=vapid_key,
            status=0,
        )

    def _verify_vapid(self, authorization: str) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
        scheme, _, rest = authorization.partition(" ")
        if scheme.lower() != "vapid":
            raise Reject(401, f"Authorization scheme {scheme!r}, not vapid")
        params = dict(part.strip().partition("=")[::2] for part in rest.split(",") if "=" in part)
        token, k = params.get("t", ""), params.get("k", "")
        try:
            point = _b64url_decode(k)
            if len(point) != 65 or point[0] != 4:
                raise ValueError("k is not an uncompressed P-256 point")
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
            verified = jwt.decode(token, ECKey.import_key(public), algorithms=["ES256"])
        except (ValueError, JoseError) as exc:
            raise Reject(401, f"VAPID token not verified: {exc!r}") from None
        claims = verified.claims
        now = self.clock.now()
        exp = claims.get("exp")
        if claims.get("aud") != self.origin:
            raise Reject(401, f"aud {claims.get('aud')!r} is not {self.origin!r}")
        if not isinstance(exp, int) or not now.timestamp() < exp <= _plus_a_day(now):
            raise Reject(401, f"exp {exp!r} is not within the next 24 hours")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub.startswith(("mailto:", "https:")):
            raise Reject(401, f"sub {sub!r} is not a mailto: or https: contact")
        return token, k, dict(verified.header), dict(claims)


def _plus_a_day(now: datetime) -> float:
    return (now + timedelta(hours=24)).timestamp()


def _decrypt(subscription: FakeSubscription, body: bytes) -> tuple[int, bytes, bytes]:
    # The aes128gcm header (RFC 8188): salt(16) rs(4) idlen(1) keyid(idlen).
    if len(body) < 21:
        raise Reject(400, "body shorter than the aes128gcm header")
    (record_size,) = struct.unpack("!L", body[16:20])
    sender_key = body[21 : 21 + body[20]]
    if len(sender_key) != 65:
        raise Reject(400, "the aes128gcm key id is not a 65-byte P-256 point (RFC 8291)")
    if len(body) - 86 > record_size:
        raise Reject(400, "more than one record (RFC 8291 allows one)")
    try:
        plaintext: bytes = http_ece.decrypt(
            body,
            private_key=subscription.private_key,
            auth_secret=subscription.auth_secret,
            version="aes128gcm",
        )
    except (http_ece.ECEException, ValueError) as exc:
        message = getattr(exc, "message", str(exc))
        raise Reject(400, f"cannot decrypt: {message}") from None
    return record_size, sender_key, plaintext


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the default of 5 resets connections under a fan-out


class _Server6(_Server):
    address_family = socket.AF_INET6


def _handler(server: WebPushServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = self.rfile.read(length)
            headers = {k.lower(): v for k, v in self.headers.items()}
            status, extra = server.handle(self.path, headers, body)
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: tests read the records instead."""

    return Handler


@contextmanager
def running_webpush_server(
    clock: Clock | None = None,
    *,
    host: str = "127.0.0.1",
    name: str | None = None,
    ca: Any = None,  # a trustme.CA (untyped)
) -> Iterator[WebPushServer]:
    """A push service on ``host`` for the block; HTTPS (cert for ``name``) when ``ca`` is given."""
    server = WebPushServer(
        clock=clock or SystemClock(), host=host, name=name, scheme="https" if ca else "http"
    )
    server_class = _Server6 if ":" in host else _Server
    http_server = server_class((host, 0), _handler(server))
    server.port = http_server.server_address[1]
    if ca is not None:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(name or host).configure_cert(context)
        http_server.socket = context.wrap_socket(http_server.socket, server_side=True)
    # A short poll interval makes shutdown() quick (the default waits up to 0.5 s).
    thread = threading.Thread(target=http_server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        http_server.shutdown()
        http_server.server_close()
