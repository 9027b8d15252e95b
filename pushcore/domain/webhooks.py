"""Signed webhook deliveries, as Standard Webhooks (standardwebhooks.com) spells them.

A webhook device's secret is ``whsec_`` and the base64 of 24 random bytes; each
delivery carries ``webhook-id`` (the delivery's id: the same on every retry, so a
receiver can drop a repeat), ``webhook-timestamp`` (Unix seconds) and
``webhook-signature``: ``v1,`` and the base64 HMAC-SHA256 of ``id.timestamp.body``
keyed with the secret's bytes. The reference library (``standardwebhooks``)
verifies what :func:`signature_headers` makes (tests/unit/test_webhooks.py).
Written out here, a dozen lines, rather than taken as a dependency of the server.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
from collections.abc import Callable, Mapping

PREFIX = "whsec_"
SECRET_BYTES = 24
# How far a receiver lets a timestamp be from its own clock (the reference's value).
TOLERANCE_SECONDS = 5 * 60


def new_secret(randbelow: Callable[[int], int]) -> str:
    """A fresh secret from the injected randomness (``randbelow(256)`` per byte)."""
    raw = bytes(randbelow(256) for _ in range(SECRET_BYTES))
    return PREFIX + base64.b64encode(raw).decode()


def _key(secret: str) -> bytes:
    return base64.b64decode(secret.removeprefix(PREFIX))


@functools.lru_cache(maxsize=1024)
def _keyed(secret: str) -> hmac.HMAC:
    # The key's HMAC state, made once per secret: a signature copies it (the event
    # sender signs every event with one of a few secrets).
    return hmac.new(_key(secret), digestmod=hashlib.sha256)


def signature(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256 of id.timestamp.body>``."""
    mac = _keyed(secret).copy()
    mac.update(f"{message_id}.{timestamp}.".encode())
    mac.update(body)
    return "v1," + base64.b64encode(mac.digest()).decode()


def signature_headers(secret: str, message_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three headers of a signed delivery."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, message_id, timestamp, body),
    }


def verify(secret: str, headers: Mapping[str, str], body: bytes, now: int) -> bool:
    """Whether ``body`` with ``headers`` (names in lowercase) was signed with ``secret``
    within :data:`TOLERANCE_SECONDS` of ``now``: what a receiver checks."""
    message_id = headers.get("webhook-id", "")
    stamp = headers.get("webhook-timestamp", "")
    if not message_id or not stamp.isdigit() or abs(now - int(stamp)) > TOLERANCE_SECONDS:
        return False
    expected = signature(secret, message_id, int(stamp), body)
    # Several space-separated signatures may be sent (while a secret is rotated).
    given = headers.get("webhook-signature", "").split()
    return any(hmac.compare_digest(expected, candidate) for candidate in given)
