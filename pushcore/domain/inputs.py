"""What callers ask for, as validated values (the converter builds these from JSON).

Field validators carry the single-field rules; functions here carry the rules
that look at several fields. Rules that need the clock, the network or the
database live in the services.
"""

from __future__ import annotations

import base64
import binascii
import string
from datetime import datetime

import attrs

from pushcore.domain import validation as v
from pushcore.domain.errors import FieldError
from pushcore.domain.model import Platform, WebPushKeys
from pushcore.domain.scheduling import DEVICE_NAME_MAX, DEVICE_TOKEN_MAX, KEY_NAME_MAX
from pushcore.domain.scopes import Scope


def _non_empty(_inst: object, _attr: object, value: tuple[Scope, ...]) -> None:
    if not value:
        raise ValueError("must name at least one scope")


@attrs.frozen
class NewApiKey:
    """A request to create an API key."""

    name: str = attrs.field(validator=v.all_of(v.text(1, KEY_NAME_MAX), v.not_blank))
    scopes: tuple[Scope, ...] = attrs.field(validator=_non_empty)
    expires_at: datetime | None = None


@attrs.frozen
class NewDevice:
    """A request to register (or re-register) a device."""

    token: str = attrs.field(validator=v.all_of(v.text(1, DEVICE_TOKEN_MAX), v.not_blank))
    platform: Platform
    name: str | None = attrs.field(default=None, validator=v.text(1, DEVICE_NAME_MAX))
    keys: WebPushKeys | None = None


_HEX = frozenset(string.hexdigits)


def _b64url_len(value: str) -> int | None:
    """Length of the bytes a base64url string (padding optional) decodes to, or None."""
    try:
        return len(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    except (binascii.Error, ValueError):
        return None


def device_errors(device: NewDevice) -> list[FieldError]:
    """Platform-specific problems with a device registration."""
    errors: list[FieldError] = []
    token = device.token
    if device.platform is Platform.IOS:
        # APNs device tokens are hex (32 bytes today; Apple says not to rely on the length).
        if not set(token) <= _HEX or len(token) % 2 or len(token) < 32:
            errors.append(FieldError("token", "must be an APNs device token in hex"))
    elif device.platform in (Platform.WEB, Platform.WEBHOOK):
        try:
            v.http_url(None, None, token)
        except ValueError as exc:
            errors.append(FieldError("token", str(exc)))
    if device.platform is Platform.WEB:
        if device.keys is None:
            errors.append(FieldError("keys", "is required for web devices (p256dh and auth)"))
        else:
            if _b64url_len(device.keys.p256dh) != 65 or not device.keys.p256dh:
                errors.append(
                    FieldError("keys.p256dh", "must be a base64url uncompressed P-256 point")
                )
            if _b64url_len(device.keys.auth) != 16:
                errors.append(FieldError("keys.auth", "must be a base64url 16-byte secret"))
    elif device.keys is not None:
        errors.append(FieldError("keys", "is only for web devices"))
    return errors
