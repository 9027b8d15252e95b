"""What callers ask for, as validated values (the converter builds these from JSON).

Field validators carry the single-field rules; functions here carry the rules
that look at several fields. Rules that need the clock, the network or the
database live in the services.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from datetime import datetime

import attrs
from cryptography.hazmat.primitives.asymmetric import ec

from pushcore.domain import validation as v
from pushcore.domain.errors import FieldError
from pushcore.domain.model import IconStyle, Platform, Priority, Sound, WebPushKeys
from pushcore.domain.scheduling import (
    BODY_MAX,
    CUSTOM_DELAY_MAX,
    CUSTOM_DELAY_MIN,
    DEVICE_NAME_MAX,
    DEVICE_TOKEN_MAX,
    KEY_NAME_MAX,
    METADATA_MAX_BYTES,
    METADATA_MAX_KEYS,
    SENDER_NAME_MAX,
    STREAM_DESCRIPTION_MAX,
    STREAM_NAME_MAX,
    TITLE_MAX,
    Delay,
)
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


_B64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")


def b64url_decode(value: str) -> bytes | None:
    """The bytes of a base64url string (padding optional), or None when it is not one."""
    # urlsafe_b64decode silently drops characters outside the alphabet; refuse them.
    if not _B64URL.fullmatch(value):
        return None
    try:
        return base64.urlsafe_b64decode(value.rstrip("=") + "=" * (-len(value.rstrip("=")) % 4))
    except (binascii.Error, ValueError):
        return None


def _is_p256_point(value: str) -> bool:
    raw = b64url_decode(value)
    if raw is None or len(raw) != 65 or raw[0] != 0x04:
        return False
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw)
    except ValueError:
        return False  # not on the curve
    return True


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
            if not _is_p256_point(device.keys.p256dh):
                errors.append(
                    FieldError("keys.p256dh", "must be a base64url uncompressed P-256 point")
                )
            auth = b64url_decode(device.keys.auth)
            if auth is None or len(auth) != 16:
                errors.append(FieldError("keys.auth", "must be a base64url 16-byte secret"))
    elif device.keys is not None:
        errors.append(FieldError("keys", "is only for web devices"))
    return errors


@attrs.frozen
class NewNotification:
    """A request to schedule a notification (POST /api/notifications)."""

    title: str = attrs.field(validator=v.all_of(v.text(1, TITLE_MAX), v.not_blank))
    body: str = attrs.field(default="", validator=v.text(0, BODY_MAX))
    icon_style: IconStyle = IconStyle.BOLT
    sound: Sound = Sound.DEFAULT
    # None means "not given": the default preset applies, and customDelay is refused.
    delay: Delay | None = None
    custom_delay: int | None = attrs.field(
        default=None, validator=v.int_range(CUSTOM_DELAY_MIN, CUSTOM_DELAY_MAX)
    )
    priority: Priority = Priority.NORMAL
    target_device_token: str | None = attrs.field(
        default=None, validator=v.text(1, DEVICE_TOKEN_MAX)
    )
    metadata: dict[str, str] | None = attrs.field(
        default=None, validator=v.string_map(METADATA_MAX_KEYS, METADATA_MAX_BYTES)
    )
    scheduled_at: datetime | None = None
    sender_name: str | None = attrs.field(default=None, validator=v.text(1, SENDER_NAME_MAX))
    sender_icon: str | None = attrs.field(default=None, validator=v.http_url)


@attrs.frozen
class NewStream:
    """A request to create a stream (POST /api/streams)."""

    name: str = attrs.field(validator=v.all_of(v.text(1, STREAM_NAME_MAX), v.not_blank))
    description: str = attrs.field(default="", validator=v.text(0, STREAM_DESCRIPTION_MAX))
    icon_url: str | None = attrs.field(default=None, validator=v.http_url)


@attrs.frozen
class StreamSend:
    """A request to send to every subscriber of a stream (POST /api/streams/:id/send)."""

    title: str = attrs.field(validator=v.all_of(v.text(1, TITLE_MAX), v.not_blank))
    body: str = attrs.field(default="", validator=v.text(0, BODY_MAX))
    sound: Sound = Sound.DEFAULT
    priority: Priority = Priority.NORMAL
    sender_name: str | None = attrs.field(default=None, validator=v.text(1, SENDER_NAME_MAX))
    sender_icon: str | None = attrs.field(default=None, validator=v.http_url)


@attrs.frozen
class Subscribe:
    """A request to subscribe to a stream by its code."""

    code: str = attrs.field(validator=v.text(1, 100))
