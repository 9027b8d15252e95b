"""JWT verification and issuing (joserfc), with algorithms fixed by configuration.

The accepted algorithm list never comes from the token: ``alg: none``, an
HS256 token signed with an RSA public key, or any algorithm the operator did
not list are refused before a signature is even looked at.

joserfc (and with it every key type of ``cryptography``, ~0.2 s to import) is
imported on the first token checked or signed: a local ``pushctl send``
builds a verifier and never uses it.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pushcore.domain.errors import ConfigError, Unauthorized
from pushcore.ports import Clock

if TYPE_CHECKING:
    from joserfc import jwt
    from joserfc.jwk import KeySet, OctKey
    from joserfc.jwt import JWTClaimsRegistry

# Identity providers and this service rarely share a clock to the second.
CLOCK_LEEWAY_SECONDS = 30
MAX_TOKEN_LENGTH = 8192
MAX_SUBJECT_LENGTH = 255
JWKS_REFRESH_SECONDS = 600
JWKS_MIN_REFETCH_SECONDS = 60
# The claim naming the session of an access token pushcore signs (OpenID's name for it).
SESSION_CLAIM = "sid"


class JwksSource:
    """A JWKS from a file or URL, cached; a URL is fetched again at most once a minute."""

    def __init__(self, location: str, ca_file: Path | None = None) -> None:
        self._location = location
        self._ca_file = ca_file
        self._lock = threading.Lock()
        self._keys: KeySet | None = None
        self._fetched_at = 0.0

    def _load(self) -> KeySet:
        import httpx
        from joserfc.jwk import KeySet

        if self._location.startswith(("https://", "http://")):
            verify: Any = str(self._ca_file) if self._ca_file else True
            response = httpx.get(self._location, timeout=5.0, verify=verify)
            response.raise_for_status()
            data = response.json()
        else:
            data = json.loads(Path(self._location).read_text(encoding="utf-8"))
        return KeySet.import_key_set(data)

    def keys(self, refresh: bool = False) -> KeySet:
        """The key set; ``refresh`` asks for a new copy (honoured at most once a minute)."""
        # Here, as joserfc: only a JWKS needs them (a local pushctl send loads neither).
        import httpx
        from joserfc.errors import JoseError

        with self._lock:
            age = time.monotonic() - self._fetched_at
            stale = self._keys is None or age > JWKS_REFRESH_SECONDS
            if stale or (refresh and age > JWKS_MIN_REFETCH_SECONDS):
                try:
                    self._keys = self._load()
                    self._fetched_at = time.monotonic()
                except (OSError, ValueError, httpx.HTTPError, JoseError) as exc:
                    if self._keys is None:
                        raise ConfigError(
                            f"PUSHCORE_JWKS: cannot load {self._location}: {exc}"
                        ) from exc
            assert self._keys is not None
            return self._keys


def _header_alg(token: str) -> object:
    head = token.split(".", 1)[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(head + "=" * (-len(head) % 4)))
    except (ValueError, binascii.Error):
        return None
    return header.get("alg") if isinstance(header, dict) else None


class TokenVerifier:
    """Checks bearer tokens: signature with the configured key, algorithm, exp, iss, aud.

    With a JWKS, the tokens pushcore signs itself (sessions: HS256 with the local
    ``secret``) are accepted beside the identity provider's: a token whose header
    says HS256 is checked with the secret and HS256 only, any other with the JWKS
    and the configured algorithms only, so neither key can stand in for the other.
    """

    def __init__(
        self,
        clock: Clock,
        algorithms: Sequence[str],
        secret: str | None = None,
        jwks: JwksSource | None = None,
        issuer: str | None = None,
        audience: str | None = None,
    ) -> None:
        if secret is None and jwks is None:
            raise ConfigError("PUSHCORE_JWT_SECRET: a secret or a JWKS is needed")
        self._clock = clock
        self._algorithms = list(algorithms)
        self._secret = secret or None
        self._jwks = jwks
        self._claims: dict[str, Any] = {"exp": {"essential": True}, "sub": {"essential": True}}
        if issuer:
            self._claims["iss"] = {"essential": True, "value": issuer}
        if audience:
            self._claims["aud"] = {"essential": True, "value": audience}
        self._made: tuple[JWTClaimsRegistry, JWTClaimsRegistry] | None = None

    def _registries(self) -> tuple[JWTClaimsRegistry, JWTClaimsRegistry]:
        """The claims checked on the identity provider's tokens, and on pushcore's own."""
        if self._made is None:
            from joserfc.jwt import JWTClaimsRegistry

            def now() -> int:
                return int(self._clock.now().timestamp())

            given = JWTClaimsRegistry(now=now, leeway=CLOCK_LEEWAY_SECONDS, **self._claims)
            # Beside a JWKS, iss and aud are the identity provider's: pushcore's own
            # tokens carry neither.
            essential: dict[str, Any] = {"exp": {"essential": True}, "sub": {"essential": True}}
            own = JWTClaimsRegistry(now=now, leeway=CLOCK_LEEWAY_SECONDS, **essential)
            self._made = (given, own if self._jwks else given)
        return self._made

    def _own(self, token: str) -> bool:
        return self._secret is not None and (self._jwks is None or _header_alg(token) == "HS256")

    def _decode(self, token: str, refresh: bool) -> jwt.Token:
        from joserfc import jwt

        if self._secret is not None and self._own(token):
            algorithms = self._algorithms if self._jwks is None else ["HS256"]
            return jwt.decode(token, _oct_key(self._secret), algorithms=algorithms)
        assert self._jwks is not None
        return jwt.decode(token, self._jwks.keys(refresh), algorithms=self._algorithms)

    def verify(self, token: str) -> str:
        """The account id (``sub``) of a valid token; Unauthorized("Token expired") for a
        well-signed token past its ``exp``, Unauthorized("Invalid token") otherwise."""
        return self.identify(token)[0]

    def identify(self, token: str) -> tuple[str, str | None]:
        """The account id and, for a token pushcore signed for a session, the session's
        id (its ``sid``; None for any other token); refused as by :meth:`verify`."""
        if not token or len(token) > MAX_TOKEN_LENGTH:
            raise Unauthorized("Invalid token")
        from joserfc.errors import ExpiredTokenError, JoseError

        own = self._own(token)
        try:
            try:
                decoded = self._decode(token, refresh=False)
            except JoseError:
                if self._jwks is None or own:
                    raise
                # The identity provider may have rotated its keys since we fetched them.
                decoded = self._decode(token, refresh=True)
            given, owns = self._registries()
            (owns if own else given).validate(decoded.claims)
        except ExpiredTokenError:
            # Only once the signature held: an expiry says nothing to a forger.
            raise Unauthorized("Token expired") from None
        except (JoseError, ValueError, TypeError, KeyError):
            raise Unauthorized("Invalid token") from None
        subject = decoded.claims.get("sub")
        # NUL: no store can keep it as an account id (PostgreSQL's text cannot).
        if (
            not isinstance(subject, str)
            or not 0 < len(subject) <= MAX_SUBJECT_LENGTH
            or "\x00" in subject
        ):
            raise Unauthorized("Invalid token")
        # An identity provider's sid is its own business: only ours name our sessions.
        session = decoded.claims.get(SESSION_CLAIM) if own else None
        return subject, session if isinstance(session, str) else None


class TokenIssuer:
    """Signs HS256 tokens with the configured secret (``pushctl token issue``)."""

    def __init__(self, clock: Clock, secret: str | None) -> None:
        self._clock = clock
        self._secret = secret or None

    def issue(self, account_id: str, ttl: timedelta, session_id: str | None = None) -> str:
        """A token for ``account_id`` that expires after ``ttl``, of the session
        ``session_id`` if given (it stops working when that session is signed out)."""
        if self._secret is None:
            raise ConfigError(
                "PUSHCORE_JWKS: tokens come from your identity provider when a JWKS is"
                " configured; pushctl can only issue tokens with PUSHCORE_JWT_SECRET"
            )
        if not 0 < len(account_id) <= MAX_SUBJECT_LENGTH:
            raise ValueError("account id must be 1 to 255 characters")
        now = int(self._clock.now().timestamp())
        claims: dict[str, object] = {
            "sub": account_id,
            "iat": now,
            "exp": now + int(ttl.total_seconds()),
        }
        if session_id is not None:
            claims[SESSION_CLAIM] = session_id
        from joserfc import jwt

        return jwt.encode({"alg": "HS256", "typ": "JWT"}, claims, _oct_key(self._secret))


@cache
def _oct_key(secret: str) -> OctKey:
    """The HS256 key of ``secret``, imported once."""
    from joserfc.jwk import OctKey

    return OctKey.import_key(secret.encode())


def verified_expiry(token: str) -> datetime | None:
    """The ``exp`` of a token that :meth:`TokenVerifier.verify` accepted (read without
    checking again), or None when it has none: what ends a live channel."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        exp = claims.get("exp") if isinstance(claims, dict) else None
    except (IndexError, ValueError, binascii.Error):
        return None
    if not isinstance(exp, int | float) or isinstance(exp, bool):
        return None
    try:
        return datetime.fromtimestamp(exp, UTC)
    except (OverflowError, OSError, ValueError):
        return None
