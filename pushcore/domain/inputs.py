"""What callers ask for, as validated values (the converter builds these from JSON).

Field validators carry the single-field rules; functions here carry the rules
that look at several fields. Rules that need the clock, the network or the
database live in the services.
"""

from __future__ import annotations

import base64
import binascii
import re
from datetime import datetime
from typing import Any

import attrs

from pushcore.domain import validation as v
from pushcore.domain.collapse import COLLAPSE_KEY, COLLAPSE_KEY_MAX, is_collapse_key
from pushcore.domain.errors import FieldError
from pushcore.domain.expiry import TTL_MAX, TTL_MIN
from pushcore.domain.inbox import is_entry_id
from pushcore.domain.localtime import DeliverAt
from pushcore.domain.model import IconStyle, Platform, Priority, Sound, WebPushKeys
from pushcore.domain.scheduling import (
    BODY_MAX,
    CUSTOM_DELAY_MAX,
    CUSTOM_DELAY_MIN,
    DEFAULT_DELAY,
    DELAY_PATTERN,
    DEVICE_NAME_MAX,
    DEVICE_TOKEN_MAX,
    KEY_NAME_MAX,
    METADATA_MAX_BYTES,
    METADATA_MAX_KEYS,
    SENDER_NAME_MAX,
    STREAM_DESCRIPTION_MAX,
    STREAM_NAME_MAX,
    TITLE_MAX,
    delay_error,
)
from pushcore.domain.scopes import Scope

EXAMPLE_FUTURE_TIME = "2036-01-01T00:00:00.000Z"
LIVE_TOKEN_MAX = 200
"""An example for a time that must be in the future: one copied from the docs must work."""


def _non_empty(value: tuple[Scope, ...]) -> None:
    if not value:
        raise ValueError("must name at least one scope")


@attrs.frozen
class NewApiKey:
    """A request to create an API key."""

    name: str = attrs.field(
        validator=v.all_of(v.text(1, KEY_NAME_MAX), v.not_blank),
        metadata=v.about("A label for people.", example="deploy-bot"),
    )
    scopes: tuple[Scope, ...] = attrs.field(
        validator=v.Rule(_non_empty, {"minItems": 1}),
        metadata=v.about(
            "At least one known scope; duplicates are removed.", example=["notifications:write"]
        ),
    )
    expires_at: datetime | None = attrs.field(
        default=None,
        metadata=v.about(
            "Optional; must be in the future. Absent or null: never expires.",
            example=EXAMPLE_FUTURE_TIME,
        ),
    )


@attrs.frozen
class NewDevice:
    """A request to register (or re-register) a device."""

    token: str = attrs.field(
        validator=v.all_of(v.text(1, DEVICE_TOKEN_MAX), v.not_blank),
        metadata=v.about(
            "`ios`: the APNs device token in hex (an even number of hex digits, at least 32). "
            "`android`: the FCM registration token. `web`: the push subscription's endpoint "
            "URL. `webhook`: the URL to POST to; a private, loopback or link-local host is "
            "refused unless PUSHCORE_ALLOW_PRIVATE_NETWORKS is true. `live`: any 1 to "
            f"{LIVE_TOKEN_MAX} characters the client picks.",
            example="fcm-example-token",
        ),
    )
    platform: Platform = attrs.field(
        metadata=v.about(
            "`ios` (APNs), `android` (FCM), `web` (Web Push), `webhook` (an http(s) URL "
            "pushcore POSTs the JSON payload to; UnifiedPush-compatible) or `live` (an app "
            "following the live channel, GET /api/inbox/events: reached once in the inbox).",
            example="android",
        )
    )
    name: str | None = attrs.field(
        default=None,
        validator=v.text(1, DEVICE_NAME_MAX),
        metadata=v.about("A label for people.", example="Pixel 9"),
    )
    keys: WebPushKeys | None = attrs.field(
        default=None, metadata=v.about("Required for `web` devices, refused for the others.")
    )


APNS_TOKEN = re.compile("(?:[0-9A-Fa-f]{2}){16,}")
"""An APNs device token: hex, an even number of digits, 32 or more (Apple says not to
rely on today's 64)."""

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
    # Here, not at the top: a client that only reads the inputs' schema loads no cryptography.
    from cryptography.hazmat.primitives.asymmetric import ec

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
        if not APNS_TOKEN.fullmatch(token):
            errors.append(FieldError("token", "must be an APNs device token in hex"))
    elif device.platform is Platform.LIVE:
        if len(token) > LIVE_TOKEN_MAX:
            errors.append(FieldError("token", f"must be 1 to {LIVE_TOKEN_MAX} characters"))
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


# Fields a notification and a stream send share, declared once.


def _title() -> Any:
    return attrs.field(
        validator=v.all_of(v.text(1, TITLE_MAX), v.not_blank),
        metadata=v.about("The notification's title.", example="Deploy finished"),
    )


def _body() -> Any:
    return attrs.field(
        default="",
        validator=v.text(0, BODY_MAX),
        metadata=v.about(
            "The body text.",
            example="All green",
            short=f"The text under the title (up to {BODY_MAX} chars).",
        ),
    )


def _delay(value: str) -> None:
    error = delay_error(value)
    if error is not None:
        raise ValueError(error)


# A preset, `custom`, or any duration: one syntax with pushctl's --delay.
_DELAY = v.Rule(_delay, {"pattern": DELAY_PATTERN})

_SOUND = v.about("`critical` breaks through Do Not Disturb on iOS.", short="The sound it plays.")
_PRIORITY = v.about(
    "Maps to each platform's urgency.", example="high", short="How urgently it interrupts."
)


def _sender_name(description: str, default: str = "") -> Any:
    short = f"Who it is from (up to {SENDER_NAME_MAX} characters{default})."
    about = v.about(description, example="CI Bot", short=short)
    return attrs.field(default=None, validator=v.text(1, SENDER_NAME_MAX), metadata=about)


def _sender_icon(description: str, default: str = "") -> Any:
    # The icon is fetched when the request comes in (the services' check).
    checked = "A PNG or JPEG of at most 5 MB, shown as a round avatar; checked when the "
    checked += "request comes in (a 400 when it does not serve one). "
    short = f"An http(s) URL of a PNG or JPEG (at most 5 MB{default})."
    about = v.about((checked + description).strip(), short=short)
    return attrs.field(default=None, validator=v.http_url, metadata=about)


def _collapse_key(value: str) -> None:
    if not is_collapse_key(value):
        raise ValueError(f"must be 1 to {COLLAPSE_KEY_MAX} characters of A-Z a-z 0-9 . _ ~ -")


def _collapse_key_field() -> Any:
    return attrs.field(
        default=None,
        validator=v.Rule(_collapse_key, {"pattern": f"^{COLLAPSE_KEY.pattern}$"}),
        metadata=v.about(
            "Names one thing that changes (a build, a score, an alarm): a newer notification "
            "of the account with the same key replaces this one (not sent yet: superseded; "
            "sent: replaced on devices and in inboxes).",
            example="build-1234",
            short="A key: a newer notification with it replaces this one.",
        ),
    )


def _renotify_field() -> Any:
    return attrs.field(
        default=True,
        metadata=v.about(
            "False makes a replacement quiet: no sound, no new alert, a read entry stays read.",
            short="Alert again when replacing (default true).",
        ),
    )


def _ttl() -> Any:
    return attrs.field(
        default=None,
        validator=v.int_range(TTL_MIN, TTL_MAX),
        metadata=v.about(
            "Seconds from the due time after which it is not delivered any more (and "
            "leaves the inbox); not with `expiresAt`.",
            short="Seconds after the due time it expires.",
        ),
    )


def _deliver_at(what: str) -> Any:
    return attrs.field(
        default=None,
        metadata={
            v.NESTED: True,
            **v.about(
                f"Each recipient gets it at this wall-clock time in their own account's "
                f"`timeZone` (default UTC): the next such time, or on `date` (a date whose "
                f"time has passed in a zone goes there at once); at most 30 days ahead. "
                f"Instead of {what}.",
                short="Each recipient's local time, {localTime: HH:MM, date?: YYYY-MM-DD}.",
            ),
        },
    )


_EXPIRES_AT = v.about(
    "When it expires (after the due time); not with `ttl`.",
    example=EXAMPLE_FUTURE_TIME,
    short="When it expires.",
)


@attrs.frozen
class NewNotification:
    """A request to schedule a notification (POST /api/notifications)."""

    title: str = _title()
    body: str = _body()
    icon_style: IconStyle = attrs.field(
        default=IconStyle.BOLT,
        metadata=v.about(
            "The icon the apps show.", example="terminal", short="The glyph shown beside it."
        ),
    )
    sound: Sound = attrs.field(default=Sound.DEFAULT, metadata=_SOUND)
    # None means "not given": the default preset applies, and customDelay is refused.
    delay: str | None = attrs.field(
        default=None,
        validator=_DELAY,
        metadata=v.about(
            "When to send: a preset (`5s`, `30s`, `1m`, `5m`, `15m`, `30m`, `1h`) or any "
            "duration from 1 s to 30 d (`90s`, `2h`, `1d`), counted from now; `custom` "
            "takes `customDelay`.",
            default=DEFAULT_DELAY.value,
            example="custom",
        ),
    )
    custom_delay: int | None = attrs.field(
        default=None,
        validator=v.int_range(CUSTOM_DELAY_MIN, CUSTOM_DELAY_MAX),
        metadata=v.about("Seconds; required with `delay: custom`, refused without.", example=90),
    )
    priority: Priority = attrs.field(default=Priority.NORMAL, metadata=_PRIORITY)
    target_device_token: str | None = attrs.field(
        default=None,
        validator=v.text(1, DEVICE_TOKEN_MAX),
        metadata=v.about(
            "One device of the account by its token (else all of them); an unknown token "
            "is a 404 `device_not_found`."
        ),
    )
    metadata: dict[str, str] | None = attrs.field(
        default=None,
        validator=v.string_map(METADATA_MAX_KEYS, METADATA_MAX_BYTES),
        metadata=v.about("String values.", example={"build": "1234"}),
    )
    scheduled_at: datetime | None = attrs.field(
        default=None,
        metadata=v.about(
            "An exact time with an offset; wins over `delay`. In the past means now; at "
            "most 30 days ahead."
        ),
    )
    sender_name: str | None = _sender_name("A sender name shown instead of the app's own.")
    sender_icon: str | None = _sender_icon("")
    collapse_key: str | None = _collapse_key_field()
    renotify: bool = _renotify_field()
    ttl: int | None = _ttl()
    expires_at: datetime | None = attrs.field(default=None, metadata=_EXPIRES_AT)
    deliver_at: DeliverAt | None = _deliver_at("`scheduledAt` and `delay`")  # noqa: RUF009 (an attrs field)


@attrs.frozen
class NewStream:
    """A request to create a stream (POST /api/streams)."""

    name: str = attrs.field(
        validator=v.all_of(v.text(1, STREAM_NAME_MAX), v.not_blank),
        metadata=v.about(
            "The stream's name.",
            example="Releases",
            short=f"The stream's name (1 to {STREAM_NAME_MAX} characters).",
        ),
    )
    description: str = attrs.field(
        default="",
        validator=v.text(0, STREAM_DESCRIPTION_MAX),
        metadata=v.about(
            "What it is about.",
            example="New versions",
            short=f"What subscribers get (up to {STREAM_DESCRIPTION_MAX} characters).",
        ),
    )
    icon_url: str | None = attrs.field(
        default=None,
        validator=v.http_url,
        metadata=v.about(
            "A PNG or JPEG of at most 5 MB; checked.",
            short="An http(s) URL of a PNG or JPEG (at most 5 MB).",
        ),
    )


@attrs.frozen
class StreamSend:
    """A request to send to every subscriber of a stream (POST /api/streams/:id/send)."""

    title: str = _title()
    body: str = _body()
    sound: Sound = attrs.field(default=Sound.DEFAULT, metadata=_SOUND)
    priority: Priority = attrs.field(default=Priority.NORMAL, metadata=_PRIORITY)
    sender_name: str | None = _sender_name(
        "Default: the stream's name.", "; default the stream's name"
    )
    sender_icon: str | None = _sender_icon(
        "Default: the stream's icon.", "; default the stream's icon"
    )
    collapse_key: str | None = _collapse_key_field()
    renotify: bool = _renotify_field()
    ttl: int | None = _ttl()
    expires_at: datetime | None = attrs.field(default=None, metadata=_EXPIRES_AT)
    deliver_at: DeliverAt | None = _deliver_at("going now (the send then waits)")  # noqa: RUF009 (an attrs field)


@attrs.frozen
class Subscribe:
    """A request to subscribe to a stream by its code."""

    code: str = attrs.field(
        validator=v.text(1, 100), metadata=v.about("The stream's code.", example="falcon-7k2q")
    )


INBOX_READ_MAX = 500


def _entry_id(value: str) -> None:
    if not is_entry_id(value):
        raise ValueError("must be an inbox entry id (inb_...)")


def _entry_ids(value: tuple[str, ...]) -> None:
    if not 1 <= len(value) <= INBOX_READ_MAX:
        raise ValueError(f"must hold 1 to {INBOX_READ_MAX} ids, not {len(value)}")
    for item in value:
        _entry_id(item)


# Crockford base32 of a number below 2**63 (domain/inbox.py).
ENTRY_ID_PATTERN = "^inb_[0-9a-f]{32}$"
_ENTRY_ID = v.Rule(_entry_id, {"pattern": ENTRY_ID_PATTERN})


@attrs.frozen
class InboxRead:
    """Entries to mark read: ``ids``, or ``upTo`` (that entry and every older one)."""

    ids: tuple[str, ...] | None = attrs.field(
        default=None,
        validator=v.Rule(
            _entry_ids,
            {
                "minItems": 1,
                "maxItems": INBOX_READ_MAX,
                "items": {"type": "string", "pattern": ENTRY_ID_PATTERN},
            },
        ),
        metadata=v.about(
            "The entries to mark read.", example=["inb_019ac2f1e4a87c2d9b0e5f4a6c1d3b27"]
        ),
    )
    up_to: str | None = attrs.field(
        default=None,
        validator=_ENTRY_ID,
        metadata=v.about("Mark this entry and every older one read (instead of `ids`)."),
    )


def inbox_read_errors(request: InboxRead) -> list[FieldError]:
    """Exactly one of ``ids`` and ``upTo``."""
    if (request.ids is None) == (request.up_to is None):
        return [FieldError("ids", "give either ids or upTo")]
    return []
