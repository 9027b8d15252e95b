"""VAPID (RFC 8292): the application server's P-256 key pair and the signed
``Authorization`` header that identifies it to push services.

The key pair is generated into the data directory on first run and kept: a
browser subscription is bound to the public key it was made with, so a new
key pair would silently orphan every web device.
"""

from __future__ import annotations

import base64
import logging
import os
import time
from datetime import datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from joserfc import jwt
from joserfc.jwk import ECKey

from pushcore.domain.errors import ConfigError
from pushcore.ports import Clock, Store
from pushcore.runtime.datadir import VAPID_KEY_FILE

log = logging.getLogger("pushcore")

VAPID_KEY = "vapid"
"""The name the key pair is shared under in the database (``server_keys``)."""
# RFC 8292 section 2: push services reject an ``exp`` more than 24 hours ahead.
MAX_TOKEN_TTL = timedelta(hours=24)
DEFAULT_TOKEN_TTL = timedelta(hours=12)
# A cached token is replaced this long before it expires, so a request that
# is slow to arrive never carries an expired one.
REFRESH_MARGIN = timedelta(hours=1)
# How long a process that lost the creation race waits for the winner to
# finish writing the key file before calling the file broken.
_WRITE_WAIT_SECONDS = 5.0


def b64url(data: bytes) -> str:
    """Base64url without padding, as Web Push and JOSE write bytes."""
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def b64url_decode(text: str) -> bytes:
    """Bytes from base64url with or without padding; ValueError when malformed."""
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class VapidKey:
    """The application server's VAPID key pair, with its signed tokens cached per origin."""

    def __init__(self, private_key: ec.EllipticCurvePrivateKey) -> None:
        if not isinstance(private_key.curve, ec.SECP256R1):
            raise ValueError("a VAPID key must be on the P-256 curve")
        self._private_key = private_key
        self._jwk = ECKey.import_key(private_key)
        point = private_key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        self.public_key_bytes = point
        self.public_key_b64url = b64url(point)
        # (origin, subject) -> (token, expiry). Signing is cheap, but a push
        # service may cache verified tokens, and one token per origin keeps
        # a fan-out of thousands of messages to one push service at one.
        self._tokens: dict[tuple[str, str], tuple[str, datetime]] = {}

    @classmethod
    def generate(cls) -> VapidKey:
        """A fresh random key pair."""
        return cls(ec.generate_private_key(ec.SECP256R1()))

    @classmethod
    def from_pem(cls, data: bytes) -> VapidKey:
        """The key pair in an unencrypted PEM private key; ValueError when it is not one."""
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"not an unencrypted PEM private key ({exc})") from None
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise ValueError("not an elliptic-curve private key")
        return cls(key)

    def to_pem(self) -> bytes:
        """The private key as unencrypted PKCS#8 PEM."""
        return self._private_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    def sign(self, claims: dict[str, str | int]) -> str:
        """An ES256 JWT of ``claims``."""
        return jwt.encode({"typ": "JWT", "alg": "ES256"}, dict(claims), self._jwk)

    def token(self, audience: str, subject: str, now: datetime, ttl: timedelta) -> str:
        """A VAPID JWT for ``audience``: the cached one unless it is within 1 h of expiry."""
        cached = self._tokens.get((audience, subject))
        # The upper bound catches a clock that went back: the push service would
        # then see the old token's exp as more than 24 h ahead.
        if cached is not None and REFRESH_MARGIN < cached[1] - now <= MAX_TOKEN_TTL:
            return cached[0]
        expires = now + ttl
        token = self.sign({"aud": audience, "exp": int(expires.timestamp()), "sub": subject})
        # int() drops the fraction: remember the expiry the token really states.
        self._tokens[(audience, subject)] = (token, expires.replace(microsecond=0))
        return token


def load_or_create_vapid_key(data_dir: Path) -> VapidKey:
    """The VAPID key pair in ``data_dir/vapid-private.pem``, generated (mode 0600) on first run."""
    path = data_dir / VAPID_KEY_FILE
    if path.exists():
        return _read_key(path)
    # O_EXCL inside: when several processes start at once, exactly one writes the
    # key and the others read it, so all of them sign with the same pair.
    return _keep(data_dir, VapidKey.generate())


def shared_vapid_key(data_dir: Path, store: Store, clock: Clock) -> VapidKey:
    """The one key pair of every process on the database, also kept in ``data_dir``.

    The first process records its pair (its data directory's, or a new one) in
    the database; the others adopt it into their data directories, so a browser
    subscription made through one process works through all. A data directory
    that already holds another pair stops the start (ConfigError): which one the
    existing subscriptions need is the operator's to say.
    """
    path = data_dir / VAPID_KEY_FILE
    own = _read_key(path) if path.exists() else None
    candidate = own if own is not None else VapidKey.generate()
    with store.transaction() as tx:
        stored = tx.server_keys.claim(VAPID_KEY, candidate.to_pem().decode(), clock.now())
    shared = VapidKey.from_pem(stored.encode())
    if own is None:
        return _keep(data_dir, shared)
    if own.public_key_b64url != shared.public_key_b64url:
        raise ConfigError(
            f"PUSHCORE_DATA_DIR: {path} holds another VAPID key pair than the one every"
            " process on this database shares: move it away to use the database's (web"
            " subscriptions made with the file's pair then stop working), or empty the"
            " database's server_keys table to make the file's pair the shared one"
        )
    return own


def _keep(data_dir: Path, key: VapidKey) -> VapidKey:
    """Write ``key`` into ``data_dir`` (0600) unless another process just did."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / VAPID_KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_key(path)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key.to_pem())
        handle.flush()
        os.fsync(handle.fileno())
    log.info("keeping the VAPID key pair in %s", path)
    return key


def _read_key(path: Path) -> VapidKey:
    # The file may exist but still be empty or half written by the process
    # that won the race: give that process a moment before giving up.
    deadline = time.monotonic() + _WRITE_WAIT_SECONDS
    while True:
        try:
            return VapidKey.from_pem(path.read_bytes())
        except ValueError as exc:
            if time.monotonic() >= deadline:
                raise ValueError(
                    f"{path} is not a P-256 private key in PEM ({exc}); restore it from a "
                    "backup, or delete it to generate a new key pair (every existing web "
                    "subscription then stops working)"
                ) from None
        time.sleep(0.02)


def check_subject(subject: str) -> str:
    """``subject`` if it is a ``mailto:`` or ``https:`` contact URI (RFC 8292), else ValueError."""
    if subject.startswith("mailto:") and len(subject) > len("mailto:"):
        return subject
    if subject.startswith("https://") and urlsplit(subject).hostname:
        return subject
    raise ValueError(
        f"PUSHCORE_VAPID_SUBJECT must be a mailto: or https: contact URI, not {subject!r}"
    )


def origin_of(url: str) -> str:
    """The URL's origin ``scheme://host[:port]``, the default port left out (RFC 6454)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname
    if scheme not in ("http", "https") or not host:
        raise ValueError(f"not an http(s) URL: {url!r}")
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is None or port == (443 if scheme == "https" else 80):
        return f"{scheme}://{host}"
    return f"{scheme}://{host}:{port}"


def vapid_authorization(
    key: VapidKey,
    endpoint_url: str,
    subject: str,
    now: datetime,
    ttl: timedelta = DEFAULT_TOKEN_TTL,
) -> str:
    """The ``Authorization: vapid t=<jwt>, k=<public key>`` value for a push endpoint."""
    if not timedelta(0) < ttl <= MAX_TOKEN_TTL:
        raise ValueError("a VAPID token lives more than 0 and at most 24 hours")
    token = key.token(origin_of(endpoint_url), subject, now, ttl)
    return f"vapid t={token}, k={key.public_key_b64url}"
