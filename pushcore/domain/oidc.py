"""Single sign-on (OpenID Connect): the rules of a sign-in's round trip, pure.

A sign-in leaves for the provider with three secrets made here: the ``state``
(which round trip a callback ends), the ``nonce`` (which ID token belongs to
it) and the PKCE ``verifier`` (which the provider checks against the challenge
it was sent). The database keeps only their SHA-256 hashes, with the path to
return to; the verifier itself stays in the browser that started, in a cookie
only the callback reads, so a callback from another browser (a forged or
leaked callback URL: login CSRF) fails. A sign-in that succeeds ends with a
one-time code in the URL fragment, which the app exchanges for a session: the
fragment never reaches a server, so no log or Referer carries it, and the
code is good once, for a minute, and only in the browser that started the
sign-in: ``start`` gives that browser a secret of its own (a cookie), whose
hash goes with the round trip and then with its code, so an attacker's code
opened in a victim's browser (``#signin=`` in a link: login CSRF) signs
nobody in.

Who is signed in is decided by :func:`landing`: the provider's identity
(``iss``, ``sub``) is bound to the account that single sign-on created for it
or that a signed-in session linked to it, and from then on signs into that
account only; a claim naming an account bound to nothing else (a password
account, say, made by sign-up before its namesake's first single sign-on)
is a clash, never a way in.

Randomness is passed in, as ``randbelow``, like the other codes of the domain.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import ipaddress
import re
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from urllib.parse import urlsplit

import attrs

from pushcore.domain import validation as v

FLOW_TTL = timedelta(minutes=10)
"""How long a person has at the provider before the round trip is refused."""
CODE_TTL = timedelta(seconds=60)
"""How long the one-time code of a finished sign-in may be exchanged (API.md)."""
SECRET_BYTES = 32  # 256 bits: 43 base64url characters, also a valid PKCE verifier
DEFAULT_NEXT = "/app/"
NEXT_MAX = 2000
# The longest account id an identity provider's claim may give (as tokens.py's sub).
ACCOUNT_MAX = 255
SCOPE = "openid profile email"
CALLBACK_PATH = "/api/auth/oidc/callback"
"""Where the provider sends people back, under PUSHCORE_PUBLIC_URL: the redirect URI."""

# A path of this site: one "/" then URL characters, none that a browser reads as
# another host ("//", "\"), a fragment of its own or a control character.
_SAME_SITE_PATH = re.compile(r"/(?![/\\])[A-Za-z0-9\-._~!$&'()*+,;=:@%/?]*")
_SECRET = re.compile(r"[A-Za-z0-9_-]{43}")


class SignInError(enum.StrEnum):
    """Why a single sign-on failed: the word after ``#signin-error=``."""

    STATE = "state"  # unknown, spent or tampered state, or another browser's round trip
    EXPIRED = "expired"  # the round trip or the ID token ran out of time
    NONCE = "nonce"  # the ID token was made for another round trip
    DENIED = "denied"  # the person (or the provider's policy) declined
    PROVIDER = "provider"  # the provider could not be reached, or refused the code
    TOKEN = "token"  # noqa: S105 (a reason word) the ID token did not verify (signature, issuer, audience)
    ACCOUNT = "account"  # the ID token has no usable account id in the configured claim
    ACCOUNT_EXISTS = "account_exists"  # the claim names an account not bound to this identity
    EMAIL_UNVERIFIED = "email_unverified"  # the account claim is email, not verified
    IDENTITY_LINKED = "identity_linked"  # a link to an identity bound to another account
    UNAVAILABLE = "unavailable"  # this server's database could not serve: try again


class SignInFailed(Exception):
    """A single sign-on that signs nobody in; ``reason`` is what the app is told."""

    def __init__(self, reason: SignInError, detail: str = "") -> None:
        super().__init__(f"{reason.value}: {detail}" if detail else reason.value)
        self.reason = reason


def new_secret(randbelow: Callable[[int], int]) -> str:
    """A fresh state, nonce, verifier or one-time code: base64url of 32 random bytes."""
    raw = bytes(randbelow(256) for _ in range(SECRET_BYTES))
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def hash_secret(secret: str) -> str:
    """SHA-256 of a secret, hex: the only form the database keeps (256 random bits
    leave nothing to guess, so a slow hash would buy nothing)."""
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).hexdigest()


def is_well_formed_secret(value: str) -> bool:
    """Whether ``value`` has the form of a secret made by :func:`new_secret`."""
    return _SECRET.fullmatch(value) is not None


def matches(secret: str, stored_hash: str) -> bool:
    """Whether ``secret`` hashes to ``stored_hash``, in constant time."""
    return hmac.compare_digest(hash_secret(secret), stored_hash)


def safe_next(raw: str | None) -> str:
    """``raw`` when it is a path of this site; :data:`DEFAULT_NEXT` otherwise.

    Whatever comes in ``?next=`` is attacker-chosen: an absolute URL, ``//host``
    or ``/\\host`` there would make the sign-in an open redirect.
    """
    if raw is None or len(raw) > NEXT_MAX or _SAME_SITE_PATH.fullmatch(raw) is None:
        return DEFAULT_NEXT
    return raw


def is_secure_url(url: str) -> bool:
    """Whether ``url`` is https, or http to a loopback host (nothing crosses a network)."""
    parts = urlsplit(url)
    if not parts.hostname or parts.query or parts.fragment:
        return False
    if parts.scheme == "https":
        return True
    if parts.scheme != "http":
        return False
    if parts.hostname == "localhost":
        return True
    try:
        return ipaddress.ip_address(parts.hostname).is_loopback
    except ValueError:
        return False


def account_from_claims(claims: Mapping[str, object], claim: str) -> str:
    """The account id the verified ID token names in ``claim``, kept as given."""
    value = claims.get(claim)
    # NUL: no store can keep it as an account id (PostgreSQL's text cannot).
    if not isinstance(value, str) or not 0 < len(value) <= ACCOUNT_MAX or "\x00" in value:
        raise SignInFailed(SignInError.ACCOUNT, f"no usable {claim!r} claim")
    return value


def check_email_verified(claims: Mapping[str, object], claim: str) -> None:
    """SignInFailed(email_unverified) when the account id is the ``email`` claim and the
    provider does not say the address is verified: anyone may type someone else's
    address at many providers. True, or the string "true" some providers send."""
    if claim != "email":
        return
    verified = claims.get("email_verified")
    if verified is not True and verified != "true":
        raise SignInFailed(SignInError.EMAIL_UNVERIFIED, "email_verified is not true")


def identity_from_claims(claims: Mapping[str, object]) -> tuple[str, str]:
    """The provider's identity of the person: its ``iss`` and ``sub`` (both verified
    present by the provider's port)."""
    issuer, subject = claims.get("iss"), claims.get("sub")
    if not isinstance(issuer, str) or not isinstance(subject, str) or not subject:
        raise SignInFailed(SignInError.TOKEN, "ID token: no iss or sub")
    if "\x00" in issuer + subject or len(subject) > ACCOUNT_MAX:
        raise SignInFailed(SignInError.TOKEN, "ID token: unusable sub")
    return issuer, subject


@attrs.frozen
class Landing:
    """Which account a finished sign-in signs into, and whether the identity is bound
    to it now (``create``: the account is made too)."""

    account_id: str
    bind: bool = False
    create: bool = False


@attrs.frozen
class Standing:
    """What the database says of a finished sign-in's identity and claimed account."""

    bound_to: str | None  # the account the identity is bound to, if any
    claimed_exists: bool  # an account with the claimed id exists
    claimed_unbound_legacy: bool  # it is one single sign-on made before bindings, no password


def landing(standing: Standing, claimed: str, link_to: str | None) -> Landing:
    """Where a sign-in with a verified identity lands (pure; see the module's text).

    ``link_to`` is the account of the signed-in session that asked to link. A
    clash raises SignInFailed(account_exists), a link to an identity bound to
    another account SignInFailed(identity_linked).
    """
    if link_to is not None:
        if standing.bound_to is None:
            return Landing(link_to, bind=True)
        if standing.bound_to == link_to:
            return Landing(link_to)
        raise SignInFailed(SignInError.IDENTITY_LINKED, "the identity is another account's")
    if standing.bound_to is not None:
        return Landing(standing.bound_to)
    if not standing.claimed_exists:
        return Landing(claimed, bind=True, create=True)
    if standing.claimed_unbound_legacy:
        return Landing(claimed, bind=True)
    raise SignInFailed(SignInError.ACCOUNT_EXISTS, "the claimed account is not this identity's")


def signed_in_location(base: str, next_path: str, code: str) -> str:
    """Where a finished sign-in sends the browser: ``next`` with the code in its fragment."""
    return f"{base}{next_path}#signin={code}"


def failed_location(base: str, reason: SignInError) -> str:
    """Where a failed sign-in sends the browser: the app, told why."""
    return f"{base}{DEFAULT_NEXT}#signin-error={reason.value}"


@attrs.frozen
class SignInFlow:
    """A round trip to the provider, as stored: hashes of its secrets, where it returns."""

    state_hash: str
    nonce_hash: str
    verifier_hash: str
    next_path: str
    created_at: datetime
    expires_at: datetime
    # The hash of the starting browser's secret (its cookie), handed on to the code.
    browser_hash: str = ""
    # The signed-in account that asked to link this identity (POST /api/auth/oidc/link).
    link_account: str | None = None

    def check_fresh(self, now: datetime) -> None:
        """SignInFailed(expired) once the person took longer than :data:`FLOW_TTL`."""
        if now >= self.expires_at:
            raise SignInFailed(SignInError.EXPIRED, "the round trip took too long")

    def check_nonce(self, claims: Mapping[str, object]) -> None:
        """SignInFailed(nonce) unless the ID token carries this round trip's nonce."""
        nonce = claims.get("nonce")
        if not isinstance(nonce, str) or not matches(nonce, self.nonce_hash):
            raise SignInFailed(SignInError.NONCE, "the ID token is not this sign-in's")


@attrs.frozen
class SignInCode:
    """The one-time code of a finished sign-in, as stored (its hash), and whose it is."""

    code_hash: str
    account_id: str
    created_at: datetime
    expires_at: datetime
    browser_hash: str = ""  # only the browser holding its secret may exchange the code


@attrs.frozen
class Identity:
    """A provider's identity (``iss``, ``sub``) bound to an account of this server."""

    issuer: str
    subject: str
    account_id: str
    created_at: datetime


@attrs.frozen
class LinkRequest:
    """A signed-in person's request to bind their provider identity to their account."""

    next: str | None = attrs.field(
        default=None,
        validator=v.text(1, NEXT_MAX),
        metadata=v.about(
            "The path of this site to return to once linked (default `/app/`).",
            example="/app/",
        ),
    )


@attrs.frozen
class SignInExchange:
    """The one-time code a finished single sign-on left in the app's URL fragment."""

    code: str = attrs.field(
        validator=v.text(1, 100),
        metadata=v.about(
            "The code after `#signin=` (43 base64url characters); good once, for 60 s.",
            example="Xb1tq0fJm3VYd5cK2lH9rWzE8sPaNo4uGyQ7iTjvDx6",
        ),
    )
