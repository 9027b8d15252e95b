"""People who sign in: account id rules, password length, refresh tokens, sign-in requests.

Pure: the refresh token's randomness is passed in, hashing needs no secret.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import re
from datetime import datetime
from importlib.resources import files

import attrs

from pushcore.domain import validation as v

ACCOUNT_ID_MAX = 64
PASSWORD_MIN = 8
PASSWORD_MAX = 256
# The longest account id a sign-in names: any JWT sub pushcore keeps (tokens.py).
SIGN_IN_ACCOUNT_MAX = 255

# Ids made here (pushctl, sign-up): stored lowercase, so `Alice` signs in as `alice`.
# The pattern takes either case, as people type them; the id kept is lowercased.
ACCOUNT_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$"
_ACCOUNT_ID = re.compile(ACCOUNT_ID_PATTERN)

REFRESH_TOKEN_PREFIX = "psr_"  # noqa: S105  (a prefix, not a secret)
REFRESH_TOKEN_BYTES = 32  # 256 bits: 43 base64url characters
_REFRESH_TOKEN = re.compile(r"psr_[A-Za-z0-9_-]{43}")


def local_account_id(raw: str) -> str:
    """The id an account made here gets for ``raw`` (lowercased); ValueError if it breaks
    the rules (1 to 64 of ``a-z 0-9 . _ - @ +``, starting with a letter or digit)."""
    if not _ACCOUNT_ID.fullmatch(raw) or not raw.isascii():
        raise ValueError(
            f"must be 1 to {ACCOUNT_ID_MAX} characters of a-z 0-9 . _ - @ +,"
            " starting with a letter or digit"
        )
    return raw.lower()


def _account_id(value: str) -> None:
    local_account_id(value)


account_id_rule = v.Rule(_account_id, {"pattern": ACCOUNT_ID_PATTERN, "maxLength": ACCOUNT_ID_MAX})
"""A new account's id, as :func:`local_account_id` takes it."""

COMMON_PASSWORDS_FILE = "common-passwords.txt"


@functools.cache
def common_passwords() -> frozenset[str]:
    """The 10,000 most common passwords, lowercased: SecLists'
    ``10-million-password-list-top-10000.txt`` (MIT licence; Mark Burnett's 10 million
    passwords), shipped with the package and read once, when first needed."""
    text = files("pushcore.domain").joinpath(COMMON_PASSWORDS_FILE).read_text("utf-8")
    return frozenset(line.lower() for line in text.splitlines() if line)


def _not_common(value: str) -> None:
    # Lowercased: "Password" and "PASSWORD" are as easy to guess as "password".
    if value.lower() in common_passwords():
        raise ValueError("is one of the 10,000 most common passwords: choose another")


password_rule = v.all_of(
    v.text(PASSWORD_MIN, PASSWORD_MAX),
    v.Rule(_not_common, {}, "Not one of the 10,000 most common passwords."),
)
"""A new password: 8 to 256 characters, not one of the 10,000 most common."""

# A password that is tried may be of any length a password can have; longer is no
# password of ours, and would only make the hash work longer.
tried_password_rule = v.text(1, PASSWORD_MAX)


def check_password(password: str) -> str:
    """``password`` when it is allowed for a new password (its length, not a common one);
    ValueError otherwise."""
    password_rule.check(password)
    return password


def refresh_token_from(random_bytes: bytes) -> str:
    """A refresh token: ``psr_`` and the base64url of 32 random bytes (43 characters)."""
    if len(random_bytes) != REFRESH_TOKEN_BYTES:
        raise ValueError(f"a refresh token takes {REFRESH_TOKEN_BYTES} random bytes")
    return REFRESH_TOKEN_PREFIX + base64.urlsafe_b64encode(random_bytes).decode().rstrip("=")


def is_well_formed_refresh_token(token: str) -> bool:
    """Whether ``token`` has a refresh token's form (refused without a lookup otherwise)."""
    return _REFRESH_TOKEN.fullmatch(token) is not None


def hash_refresh_token(token: str) -> str:
    """SHA-256 of the token, hex: the only form it is stored in (256 random bits leave
    nothing to guess, so a slow hash would buy nothing)."""
    return hashlib.sha256(token.encode("ascii")).hexdigest()


@attrs.frozen
class Password:
    """An account's password, as stored: its argon2id hash only."""

    account_id: str
    hash: str = attrs.field(repr=False)
    set_at: datetime


@attrs.frozen
class RefreshToken:
    """A refresh token as stored. One sign-in's tokens share ``family_id`` (the first
    one's id): presenting a spent one revokes the whole family."""

    id: str
    account_id: str
    family_id: str
    token_hash: str = attrs.field(repr=False)
    created_at: datetime
    expires_at: datetime
    used_at: datetime | None = None
    revoked_at: datetime | None = None


@attrs.frozen
class SessionRevocation:
    """A session (a family of refresh tokens, the ``sid`` of its access tokens) ended
    before its access tokens expire: they are refused until ``until``, when the last
    of them has expired anyway."""

    session_id: str
    account_id: str
    revoked_at: datetime
    until: datetime


# Requests -------------------------------------------------------------------------

_ACCOUNT = v.about("The account id.", example="alice")
_PASSWORD = v.about("The password.", example="correct horse battery")


@attrs.frozen
class SignIn:
    """A sign-in with a password."""

    account: str = attrs.field(validator=v.text(1, SIGN_IN_ACCOUNT_MAX), metadata=_ACCOUNT)
    password: str = attrs.field(validator=tried_password_rule, metadata=_PASSWORD)


@attrs.frozen
class SignUp:
    """A new account with a password (when PUSHCORE_SIGNUP is on)."""

    account: str = attrs.field(
        validator=account_id_rule,
        metadata=v.about(
            "1 to 64 of `a-z 0-9 . _ - @ +`, starting with a letter or digit; kept lowercase.",
            example="alice",
        ),
    )
    password: str = attrs.field(
        validator=password_rule,
        metadata=v.about("8 to 256 characters.", example="correct horse battery"),
    )


@attrs.frozen
class SessionRefresh:
    """A refresh token to spend (refresh) or to end the sign-in with (logout)."""

    refresh_token: str = attrs.field(
        validator=v.text(1, 100),
        metadata=v.about(
            "The refresh token of a session (`psr_` and 43 base64url characters).",
            example="psr_" + "A" * 43,
        ),
    )


@attrs.frozen
class PasswordChange:
    """A new password for the signed-in account."""

    current_password: str = attrs.field(validator=tried_password_rule, metadata=_PASSWORD)
    new_password: str = attrs.field(
        validator=password_rule,
        metadata=v.about("8 to 256 characters.", example="another horse battery"),
    )
