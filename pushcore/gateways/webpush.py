"""Web Push devices: the neutral payload, encrypted (RFC 8291) and signed for (RFC 8292).

Each message is encrypted with ``aes128gcm`` to the subscription's ``p256dh``
key and ``auth`` secret, with a fresh ephemeral key pair, and POSTed to the
subscription's endpoint (RFC 8030) with a VAPID ``Authorization`` header.
201 (or any 2xx) is delivered; 404 and 410 mean the subscription is gone
(the device is deactivated); 429 and 5xx are retried, honouring
Retry-After; any other answer (413 too large, 400, 401/403 VAPID refused,
redirects) fails for good. Network errors are retried.

Endpoints are URLs the browser chose, so they are user input: the SSRF
guard runs again at delivery, and the request connects to the very address
it checked, as the webhook gateway does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
from collections.abc import Sequence
from typing import Any

import aiohttp
import http_ece
from cryptography.hazmat.primitives.asymmetric import ec

from pushcore.config import Settings
from pushcore.domain.addresses import IPAddress
from pushcore.domain.collapse import web_push_topic
from pushcore.domain.model import Priority, WebPushKeys
from pushcore.domain.outcomes import Delivered, Dispatch, Failed, Outcome, Retry, TokenInvalid
from pushcore.domain.payload import shorten_to_fit
from pushcore.gateways._answer import retry_after_seconds
from pushcore.gateways._http import (
    BatchResolver,
    Limits,
    Poster,
    post_pinned,
    status_reason,
)
from pushcore.gateways.after_sending import neutral_body, web_push_ttl
from pushcore.gateways.quiet import WEB_PUSH_URGENCY
from pushcore.gateways.receipts import Stamped
from pushcore.gateways.vapid import (
    VapidKey,
    b64url_decode,
    check_subject,
    load_or_create_vapid_key,
    vapid_authorization,
)
from pushcore.outbound.guard import NetworkGuard, pin, tls_context
from pushcore.ports import Clock
from pushcore.ports.delivery import Ready

log = logging.getLogger("pushcore.delivery")

USER_AGENT = "pushcore-webpush/1"
URGENCY = {
    Priority.LOW: "low",
    Priority.NORMAL: "normal",
    Priority.HIGH: "high",
    Priority.CRITICAL: "high",
}
# RFC 8291 section 4: one record of at most 4096 octets. The aes128gcm
# header takes 86 (16 salt, 4 record size, 1 key id length, 65 key id) and
# the record 17 (a delimiter octet and the 16-octet tag): 3993 remain.
RECORD_SIZE = 4096
MAX_PLAINTEXT = RECORD_SIZE - 86 - 17
# The endpoint did not answer in time, or refused the connection: its host's
# lane takes fewer requests at once (see gateways/lanes.py).
TIMED_OUT = "Web Push endpoint timed out"
UNREACHED = "Web Push endpoint unreachable"
UNREACHABLE = frozenset({TIMED_OUT, UNREACHED})
TOO_LARGE = "Web Push payload too large: over 3993 bytes even with the body and title cut"


class WebPushGateway:
    """Sends to Web Push subscriptions over one shared aiohttp session (made on first use)."""

    def __init__(
        self,
        *,
        vapid: VapidKey,
        subject: str,
        guard: NetworkGuard,
        clock: Clock,
        tls: ssl.SSLContext | None = None,
        timeout: float = 10.0,
        connect_timeout: float = 5.0,
        concurrency: int = 128,
        host_concurrency: int = 64,
        account_concurrency: int = 64,
        max_wait: float = 5.0,
    ) -> None:
        self._vapid = vapid
        self._subject = check_subject(subject)
        self._guard = guard
        self._clock = clock
        timeouts = aiohttp.ClientTimeout(total=timeout, sock_connect=connect_timeout)
        limits = Limits(concurrency, host_concurrency, account_concurrency, max_wait)
        self._poster = Poster(tls, timeouts, limits, UNREACHABLE)

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock) -> WebPushGateway:
        """The gateway for ``settings``: the data directory's VAPID key, PUSHCORE_VAPID_SUBJECT."""
        if not settings.vapid_subject:
            raise ValueError("Web Push is not configured: set PUSHCORE_VAPID_SUBJECT")
        subject = check_subject(settings.vapid_subject)
        return cls(
            vapid=load_or_create_vapid_key(settings.data_dir),
            subject=subject,
            guard=NetworkGuard(allow_private=settings.allow_private_networks),
            clock=clock,
            tls=tls_context(settings.ca_file),
        )

    def check(self) -> str:
        """A start-up line (subject, public key) after a test signature; ValueError if unusable."""
        # Signed directly, not through the cache, so checking leaves no token behind.
        self._vapid.sign({"aud": "https://check.invalid", "exp": 0, "sub": self._subject})
        return (
            f"Web Push ready: VAPID subject {self._subject}, "
            f"public key {self._vapid.public_key_b64url}"
        )

    async def send(self, dispatches: Sequence[Dispatch]) -> Sequence[Outcome]:
        """Encrypt and post every dispatch concurrently (bounded); one outcome each."""
        return await asyncio.gather(*self.send_each(dispatches))

    def send_each(
        self, dispatches: Sequence[Dispatch], ready: Ready | None = None
    ) -> Sequence[asyncio.Future[Outcome]]:
        """Start sending every dispatch its lanes admit (the others are Deferred); each
        request awaits ``ready`` first, when given."""
        # A fan-out batch is one notification to many endpoints on a few push
        # services: encode each payload once and check each host once.
        plaintexts: Stamped[None] = Stamped(
            lambda dispatch, receipt: fitted_plaintext(neutral_body(dispatch, receipt))
        )
        resolve = BatchResolver(self._guard)

        async def post(dispatch: Dispatch) -> Outcome:
            url = dispatch.device.token
            return await self._send_one(dispatch, resolve(url), plaintexts(dispatch))

        return self._poster.lanes.send_each(dispatches, post, ready)

    async def _send_one(
        self, dispatch: Dispatch, resolving: asyncio.Task[IPAddress], plaintext: bytes | None
    ) -> Outcome:
        if plaintext is None:
            return Failed(TOO_LARGE)
        keys = dispatch.device.keys
        if keys is None:
            return Failed("Web Push subscription has no keys (p256dh, auth)")
        try:
            address = await asyncio.shield(resolving)
        except ValueError as exc:
            return Failed(f"Web Push endpoint refused: {exc}")
        url = dispatch.device.token
        pinned = pin(url, address)
        # Encrypting inside the lanes' slot interleaves the CPU work with the
        # network instead of encrypting a whole fan-out before the first send.
        try:
            body = encrypt(plaintext, keys)
        except ValueError:
            return Failed("Web Push subscription keys are invalid")
        urgency = WEB_PUSH_URGENCY if dispatch.quiet else URGENCY[dispatch.notification.priority]
        headers = {
            "Authorization": vapid_authorization(
                self._vapid, url, self._subject, self._clock.now()
            ),
            "Content-Encoding": "aes128gcm",
            "Content-Type": "application/octet-stream",
            "TTL": str(web_push_ttl(dispatch.notification, self._clock.now())),
            "Urgency": urgency,
            "User-Agent": USER_AGENT,
        }
        key = dispatch.notification.collapse_key
        if key is not None:
            # RFC 8030 5.4: the push service keeps only the latest message per topic.
            headers["Topic"] = web_push_topic(key)
        try:
            answer = await post_pinned(self._poster.session(), pinned, body, headers)
        except TimeoutError:
            return Retry(TIMED_OUT)
        except aiohttp.ClientError:
            return Retry(UNREACHED)
        return self._outcome(dispatch, answer.status, answer.retry_after, answer.body)

    def _outcome(
        self, dispatch: Dispatch, status: int, retry_after: str | None, answer: bytes
    ) -> Outcome:
        if 200 <= status < 300:
            return Delivered()
        reason = status_reason(status)
        if status in (404, 410):
            return TokenInvalid(reason)
        if status == 429 or status >= 500:
            return Retry(reason, retry_after_seconds(retry_after, self._clock.now()))
        # A refusal for good is usually a configuration problem (a VAPID key
        # other than the one the browser subscribed with, a bad subject): the
        # push service's explanation is only in its answer, so log it.
        log.warning(
            "Web Push refused delivery %s to device %s: %s %s",
            dispatch.delivery.id,
            dispatch.device.id,
            status,
            answer[:500].decode("utf-8", errors="replace"),
        )
        return Failed(reason)

    async def aclose(self) -> None:
        """Close the session."""
        await self._poster.aclose()


def _encode(payload: dict[str, Any]) -> bytes:
    # Not ASCII-escaped: every byte counts against the 3993-byte limit, and
    # "\u00e9" takes three times the bytes of "é".
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


def fitted_plaintext(payload: dict[str, Any]) -> bytes | None:
    """The payload as UTF-8 JSON, its body (then title) cut to fit one record, or None."""
    fitted = dict(payload)
    if not shorten_to_fit(fitted, ("body", "title"), lambda: len(_encode(fitted)), MAX_PLAINTEXT):
        return None
    return _encode(fitted)


def encrypt(
    plaintext: bytes,
    keys: WebPushKeys,
    *,
    ephemeral: ec.EllipticCurvePrivateKey | None = None,
    salt: bytes | None = None,
) -> bytes:
    """``plaintext`` in one RFC 8291 ``aes128gcm`` record for the keys; ValueError if unusable."""
    # ``ephemeral`` and ``salt`` are given only by tests (the RFC's example);
    # otherwise both are fresh and random.
    receiver_key = b64url_decode(keys.p256dh)
    auth_secret = b64url_decode(keys.auth)
    if len(auth_secret) != 16:
        raise ValueError("the auth secret must be 16 bytes")
    # Checks the point is on the curve before http_ece uses it.
    ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), receiver_key)
    body: bytes = http_ece.encrypt(
        plaintext,
        # The sender's key pair is ephemeral (RFC 8291): one per message, so no
        # two messages share a key agreement.
        private_key=ephemeral or ec.generate_private_key(ec.SECP256R1()),
        dh=receiver_key,
        auth_secret=auth_secret,
        salt=salt,
        version="aes128gcm",
        rs=RECORD_SIZE,
    )
    return body
