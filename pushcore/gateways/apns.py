"""APNs: token-based (ES256 JWT) provider API over HTTP/2.

Each delivery is a ``POST /3/device/<token>`` on a small pool of HTTP/2
connections (see :mod:`pushcore.gateways.http2`, and why it is not
httpx). The provider token is signed with the team's .p8 key, reused, and
signed again after 50 minutes: Apple refuses tokens older than an hour and
answers TooManyProviderTokenUpdates to a provider that changes its token
more often than every 20 minutes.

Answers: 200 is delivered; 410 and the 400s BadDeviceToken and
DeviceTokenNotForTopic mean the token is dead; 403 ExpiredProviderToken is
answered by signing a new token and trying once more; 429 and 5xx are
retried (a 500 or 503 also replaces the connection); any other answer is a
permanent failure with Apple's reason. Connection failures and timeouts are
retried.
"""

from __future__ import annotations

import json
import os
import re
import ssl
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import attrs
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from hpack import NeverIndexedHeaderTuple
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import ECKey

from pushcore.config import Settings
from pushcore.domain.model import Notification, Priority, Sound
from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry, TokenInvalid
from pushcore.domain.payload import sender_of, shorten_to_fit
from pushcore.domain.withdraw import is_withdrawal
from pushcore.gateways._answer import retry_after_seconds
from pushcore.gateways._http import status_reason
from pushcore.gateways.after_sending import apns_expiration, apns_withdrawal
from pushcore.gateways.http2 import H2Error, H2Pool, Header, Response
from pushcore.gateways.quiet import quiet_apns_payload
from pushcore.gateways.receipts import Stamped
from pushcore.outbound.guard import tls_context
from pushcore.ports import Clock

PRODUCTION_URL = "https://api.push.apple.com"
SANDBOX_URL = "https://api.sandbox.push.apple.com"
MAX_PAYLOAD = 4096

TOKEN_MAX_AGE = timedelta(minutes=50)
TOKEN_MIN_AGE = timedelta(minutes=20)

_SOUNDS: dict[Sound, Any] = {
    Sound.DEFAULT: "default",
    Sound.SOFT: "soft.caf",
    Sound.CRITICAL: {"critical": 1, "name": "default", "volume": 1.0},
}
_LEVELS = {
    Priority.LOW: "passive",
    Priority.NORMAL: "active",
    Priority.HIGH: "time-sensitive",
    Priority.CRITICAL: "critical",
}
_DEAD_TOKEN = frozenset({"BadDeviceToken", "DeviceTokenNotForTopic"})
# Checked before the token goes into the request path: a device token is hex.
_DEVICE_TOKEN = re.compile(r"[0-9A-Fa-f]{8,512}")


class PayloadTooLarge(ValueError):
    """Even with the title and body shortened, the payload is over 4096 bytes."""


def apns_payload(notification: Notification) -> dict[str, Any]:
    """The APNs JSON payload of API.md, before any shortening."""
    sender = sender_of(notification)
    aps: dict[str, Any] = {
        "alert": {"title": notification.title, "body": notification.body},
        "sound": _SOUNDS[notification.sound],
        "interruption-level": _LEVELS[notification.priority],
    }
    if sender is not None:
        # Lets the app's notification service extension draw the sender's icon.
        aps["mutable-content"] = 1
    if not notification.renotify:
        # A quiet replacement: no sound, and no alert that lights the screen.
        del aps["sound"]
        aps["interruption-level"] = "passive"
    payload: dict[str, Any] = {
        "aps": aps,
        "notificationId": notification.id,
        "iconStyle": notification.icon_style.value,
        "metadata": dict(notification.metadata),
    }
    if sender is not None:
        payload["sender"] = sender
    if notification.stream is not None:
        payload["stream"] = {"name": notification.stream.name, "code": notification.stream.code}
    return payload


def _dump(payload: dict[str, Any]) -> bytes:
    # UTF-8 rather than \u escapes: non-ASCII text then costs 2-4 bytes, not 6-12.
    # A lone surrogate (which UTF-8 cannot carry) becomes "?" rather than an error.
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return text.encode(errors="replace")


def _encoded_or_failed(dispatch: Dispatch, receipt: str | None) -> bytes | Failed:
    if is_withdrawal(dispatch.delivery):
        return apns_withdrawal(dispatch.notification)
    try:
        return encode_payload(dispatch.notification, receipt, dispatch.quiet)
    except PayloadTooLarge as exc:
        return Failed(str(exc))


def encode_payload(
    notification: Notification, receipt: str | None = None, quiet: bool = False
) -> bytes:
    """The payload as sent: at most 4096 bytes, the body (then the title) cut with an ellipsis.

    Raises PayloadTooLarge when the other fields (metadata, sender, stream)
    leave no room even for an empty title and body.
    """
    payload = apns_payload(notification)
    if quiet:
        payload = quiet_apns_payload(payload)
    if receipt is not None:
        payload["receipt"] = receipt
    alert = payload["aps"]["alert"]
    if not shorten_to_fit(alert, ("body", "title"), lambda: len(_dump(payload)), MAX_PAYLOAD):
        raise PayloadTooLarge(
            f"APNs payload too large: metadata, sender and stream alone take"
            f" {len(_dump(payload))} bytes of the {MAX_PAYLOAD} allowed"
        )
    return _dump(payload)


def load_key(key_pem: bytes) -> ECKey:
    """The .p8 key as a signing key; ValueError saying what is wrong with it."""
    try:
        key = load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"the APNs key is not a PKCS#8 PEM private key (.p8): {exc}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ValueError("the APNs key must be an EC P-256 key (ES256), as Apple issues them")
    return ECKey.import_key(key_pem)


class ProviderToken:
    """The signed provider token (ES256 JWT), reused until it is 50 minutes old."""

    def __init__(self, key_pem: bytes, key_id: str, team_id: str, clock: Clock) -> None:
        self._key_pem = key_pem
        self._key: ECKey | None = None
        self._header = {"alg": "ES256", "kid": key_id}
        self._team_id = team_id
        self._clock = clock
        self._token = ""
        self._signed_at: datetime | None = None
        self.signed = 0  # how many tokens were signed (for tests and metrics)

    def sign(self) -> str:
        """A fresh token for now (loads the key on first use; ValueError if unusable)."""
        if self._key is None:
            self._key = load_key(self._key_pem)
        now = self._clock.now()
        claims = {"iss": self._team_id, "iat": int(now.timestamp())}
        self._token = jwt.encode(self._header, claims, self._key, algorithms=["ES256"])
        self._signed_at = now
        self.signed += 1
        return self._token

    def current(self) -> str:
        """The token to use now, signed again when it is 50 minutes old."""
        if self._signed_at is None or self._clock.now() - self._signed_at >= TOKEN_MAX_AGE:
            return self.sign()
        return self._token

    def renew(self, rejected: str) -> bool:
        """After ExpiredProviderToken for ``rejected``: whether a newer token is now current.

        Signs one only when ``rejected`` is still the current token and is at least
        20 minutes old; Apple refuses tokens changed more often than that.
        """
        if rejected != self._token:
            return True  # another request already renewed it
        if self._signed_at is None or self._clock.now() - self._signed_at < TOKEN_MIN_AGE:
            return False
        self.sign()
        return True


@attrs.frozen
class _Push:
    """One request to send: its place in the batch, path, own headers and payload."""

    index: int
    path: str
    headers: list[Header]
    body: bytes


class ApnsGateway:
    """Sends to iOS devices through APNs with token authentication."""

    def __init__(
        self,
        *,
        key_pem: bytes,
        key_id: str,
        team_id: str,
        topic: str,
        base_url: str,
        clock: Clock,
        tls: ssl.SSLContext | None = None,
        connections: int = 2,
        timeout: float = 20.0,
        connect_timeout: float = 10.0,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "https" or not parts.hostname:
            raise ValueError(f"APNs URL must be an https URL: {base_url!r}")
        self._host = parts.hostname
        self._port = parts.port or 443
        self.base_url = base_url
        self.key_id = key_id
        self.team_id = team_id
        self.topic = topic
        self._clock = clock
        # The context is given ALPN h2: do not share it with HTTP/1.1 clients.
        self._tls = tls if tls is not None else ssl.create_default_context()
        self._tls.set_alpn_protocols(["h2"])
        self._connections = connections
        self._timeout = timeout
        self._connect_timeout = connect_timeout
        self._key_pem = key_pem
        self.tokens = ProviderToken(key_pem, key_id, team_id, clock)
        self._pool: H2Pool | None = None
        self._auth: tuple[str, list[Header]] = ("", [])

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock) -> ApnsGateway:
        """The gateway PUSHCORE_APNS_* configure; ValueError naming what is missing."""
        required = {
            "PUSHCORE_APNS_KEY_FILE": settings.apns_key_file,
            "PUSHCORE_APNS_KEY_ID": settings.apns_key_id,
            "PUSHCORE_APNS_TEAM_ID": settings.apns_team_id,
            "PUSHCORE_APNS_TOPIC": settings.apns_topic,
        }
        missing = [name for name, value in required.items() if not value]
        if missing or settings.apns_key_file is None:
            raise ValueError(f"APNs is not configured: set {', '.join(missing)}")
        try:
            key_pem = settings.apns_key_file.read_bytes()
        except OSError as exc:
            raise ValueError(f"PUSHCORE_APNS_KEY_FILE: cannot read the key: {exc}") from None
        production = settings.apns_environment == "production"
        try:
            return cls(
                key_pem=key_pem,
                key_id=str(settings.apns_key_id),
                team_id=str(settings.apns_team_id),
                topic=str(settings.apns_topic),
                base_url=settings.apns_url or (PRODUCTION_URL if production else SANDBOX_URL),
                clock=clock,
                tls=tls_context(settings.ca_file),
            )
        except ValueError as exc:
            raise ValueError(f"PUSHCORE_APNS_URL: {exc}") from None

    def check(self) -> str:
        """Load the key and sign a token: a line for people; ValueError if the key is unusable."""
        # A separate token, so that checking does not count as a token update.
        token = ProviderToken(self._key_pem, self.key_id, self.team_id, self._clock).sign()
        try:
            jwt.decode(token, load_key(self._key_pem), algorithms=["ES256"])
        except (JoseError, ValueError) as exc:
            raise ValueError(f"the APNs key signs tokens it cannot verify: {exc}") from None
        return (
            f"APNs key {self.key_id} of team {self.team_id} (ES256 provider tokens);"
            f" topic {self.topic}; sending to {self.base_url}"
        )

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Send every dispatch concurrently over the connection pool; one outcome each."""
        try:
            self.tokens.current()
        except ValueError as exc:
            return [Failed(f"APNs key unusable: {exc}") for _ in dispatches]
        if self._pool is None:
            self._pool = H2Pool(
                self._host,
                self._port,
                tls=self._tls,
                connections=self._connections,
                connect_timeout=self._connect_timeout,
            )
        outcomes: list[Outcome | None] = [None] * len(dispatches)
        ready = self._prepare(dispatches, outcomes)
        renewed = False
        while ready:
            token = self._auth_headers()[0]
            expired = await self._post(self._pool, ready, outcomes)
            ready = []
            if not expired:
                break
            if renewed:
                # A token signed just now expired too: something is wrong with it.
                for request in expired:
                    outcomes[request.index] = Failed("ExpiredProviderToken")
            elif not self.tokens.renew(token):
                # Our token is young, so APNs's clock and ours disagree;
                # signing again now would only earn TooManyProviderTokenUpdates.
                for request in expired:
                    outcomes[request.index] = Retry(
                        "ExpiredProviderToken (provider token is recent: check the clock)"
                    )
            else:
                renewed = True
                ready = expired
        return [outcome if outcome is not None else Failed("not sent") for outcome in outcomes]

    def _prepare(
        self, dispatches: Sequence[Dispatch], outcomes: list[Outcome | None]
    ) -> list[_Push]:
        """The pushes to send; the outcome of those that cannot be sent goes in ``outcomes``."""
        now = self._clock.now()
        # A fan-out batch is one notification to many devices: encode it once.
        bodies: Stamped[Failed] = Stamped(_encoded_or_failed)
        ready: list[_Push] = []
        ids = _apns_ids(len(dispatches))
        for index, dispatch in enumerate(dispatches):
            notification = dispatch.notification
            withdrawal = is_withdrawal(dispatch.delivery)
            body = bodies(dispatch)
            if isinstance(body, Failed):
                outcomes[index] = body
            elif not _DEVICE_TOKEN.fullmatch(dispatch.device.token):
                outcomes[index] = TokenInvalid("BadDeviceToken")
            else:
                # A withdrawal is a background push, which APNs takes at priority 5 only;
                # a quiet one (quiet hours, silent mode) is delivered without waking.
                low = withdrawal or dispatch.quiet or notification.priority is Priority.LOW
                headers: list[Header] = [
                    (b"apns-push-type", b"background" if withdrawal else b"alert"),
                    (b"apns-priority", b"5" if low else b"10"),
                    (b"apns-expiration", apns_expiration(notification, now)),
                    # Unique: keep it out of HPACK's table.
                    NeverIndexedHeaderTuple(b"apns-id", ids[index]),
                ]
                if notification.collapse_key is not None:
                    headers.append((b"apns-collapse-id", notification.collapse_key.encode()))
                ready.append(_Push(index, f"/3/device/{dispatch.device.token}", headers, body))
        return ready

    async def _post(
        self, pool: H2Pool, pushes: list[_Push], outcomes: list[Outcome | None]
    ) -> list[_Push]:
        """Send ``pushes`` with the current token; those refused with ExpiredProviderToken."""
        auth = self._auth_headers()[1]
        requests = [(p.path, [*auth, *p.headers], p.body) for p in pushes]
        results = await pool.post_many(requests, self._timeout)
        expired: list[_Push] = []
        for push, result in zip(pushes, results, strict=True):
            if isinstance(result, TimeoutError):
                outcomes[push.index] = Retry("APNs timed out")
            elif isinstance(result, H2Error):
                outcomes[push.index] = Retry(f"APNs connection failed: {result}")
            elif result.status == 403 and _reason(result) == "ExpiredProviderToken":
                expired.append(push)
            else:
                outcomes[push.index] = self._outcome(result)
        return expired

    def _auth_headers(self) -> tuple[str, list[Header]]:
        # Constant for the token's 50 minutes: HPACK indexes them once per
        # connection, after which each costs a byte or two per request.
        token = self.tokens.current()
        if token != self._auth[0]:
            self._auth = (
                token,
                [
                    (b"authorization", b"bearer " + token.encode()),
                    (b"apns-topic", self.topic.encode()),
                ],
            )
        return self._auth

    def _outcome(self, response: Response) -> Outcome:
        status = response.status
        if status == 200:
            return Delivered()
        reason = _reason(response) or status_reason(status)
        if status == 410 or (status == 400 and reason in _DEAD_TOKEN):
            return TokenInvalid(reason)
        if status == 429 or status >= 500:
            if status in (500, 503):
                # APNs says this connection's server is in trouble: move on.
                response.connection.retire()
            after = retry_after_seconds(response.headers.get("retry-after"), self._clock.now())
            return Retry(reason, after)
        return Failed(reason)

    async def aclose(self) -> None:
        """Close the connections."""
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None


def _apns_ids(count: int) -> list[bytes]:
    """``count`` random (version 4) UUIDs, as uuid.uuid4() makes them, from one read of
    os.urandom: per id, uuid4's own read and int arithmetic cost as much as a push's HPACK."""
    pool = os.urandom(16 * count)
    ids = []
    for start in range(0, 16 * count, 16):
        raw = bytearray(pool[start : start + 16])
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        h = raw.hex()
        ids.append(f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}".encode())
    return ids


def _reason(response: Response) -> str | None:
    # Apple's answer body is {"reason": "BadDeviceToken"} (plus a timestamp for 410).
    if not response.body:
        return None
    try:
        answer = json.loads(response.body)
    except ValueError:
        return None
    reason = answer.get("reason") if isinstance(answer, dict) else None
    return reason if isinstance(reason, str) and reason else None
