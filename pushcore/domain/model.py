"""The entities of pushcore as frozen attrs classes.

State changes return new objects (``attrs.evolve``); the storage adapters
turn rows into these and back, so nothing above storage sees a row.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from datetime import datetime

import attrs

from pushcore.domain.localtime import LocalTime, as_kept
from pushcore.domain.scopes import Failure, Outcome, Scope, Success
from pushcore.domain.states import DeliveryStatus, NotificationStatus
from pushcore.domain.validation import about


class Plan(enum.StrEnum):
    """An account's plan; it sets how many streams the account may hold."""

    FREE = "free"
    PRO = "pro"


class Platform(enum.StrEnum):
    """How a device is reached."""

    IOS = "ios"
    ANDROID = "android"
    WEB = "web"
    WEBHOOK = "webhook"
    # An open app or `pushctl listen` following the live channel: no gateway.
    LIVE = "live"


class IconStyle(enum.StrEnum):
    """The small glyph the app shows beside a notification."""

    BOLT = "bolt"
    BELL = "bell"
    TERMINAL = "terminal"
    STACK = "stack"


class Sound(enum.StrEnum):
    """The sound a notification plays."""

    DEFAULT = "default"
    SOFT = "soft"
    CRITICAL = "critical"


class Priority(enum.StrEnum):
    """How urgently a notification should interrupt."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"
    CRITICAL = "critical"


@attrs.frozen
class Account:
    """Whoever owns keys, devices, notifications and streams; the JWT ``sub``."""

    id: str
    plan: Plan
    created_at: datetime
    last_sign_in_at: datetime | None = None


@attrs.frozen
class ApiKey:
    """An API key as stored: only its hash and displayable prefix, never the secret."""

    id: str
    account_id: str
    name: str
    key_hash: str
    key_prefix: str
    scopes: tuple[Scope, ...]
    expires_at: datetime | None
    created_at: datetime
    is_active: bool = True
    last_used_at: datetime | None = None
    revoked_at: datetime | None = None

    def check_usable(self, now: datetime) -> Outcome:
        """Success unless the key is revoked or expired at ``now``."""
        if not self.is_active:
            return Failure("API key revoked")
        if self.expires_at is not None and self.expires_at <= now:
            return Failure("API key expired")
        return Success()

    def revoked(self, now: datetime) -> ApiKey:
        """This key revoked; revoking twice keeps the first revocation time."""
        if not self.is_active:
            return self
        return attrs.evolve(self, is_active=False, revoked_at=now)


@attrs.frozen
class WebPushKeys:
    """A Web Push subscription's keys (base64url, as the browser gives them)."""

    p256dh: str = attrs.field(metadata=about("The subscription's P-256 public key (65 bytes)."))
    auth: str = attrs.field(metadata=about("The subscription's 16-byte auth secret."))


@attrs.frozen
class Device:
    """A registered device of an account."""

    id: str
    account_id: str
    platform: Platform
    token: str
    name: str | None
    created_at: datetime
    keys: WebPushKeys | None = None
    is_active: bool = True
    last_delivered_at: datetime | None = None
    # Webhook devices: what each delivery is signed with (domain/webhooks.py).
    webhook_secret: str | None = None
    # The last registration of its token (None: not since migration 0014, so
    # its creation); with last_delivered_at, what says a live device is in use.
    refreshed_at: datetime | None = None

    @property
    def token_prefix(self) -> str:
        """The displayable first 8 characters of the token."""
        return self.token[:8]


@attrs.frozen
class StreamRef:
    """What a notification remembers of the stream it was sent to."""

    id: str
    name: str
    code: str


@attrs.frozen
class ScheduleRef:
    """The recurring schedule, and which of its occurrences, a notification was made for."""

    id: str
    occurrence_at: datetime


@attrs.frozen
class Notification:
    """A scheduled push notification and everything its request said."""

    id: str
    account_id: str
    title: str
    body: str
    icon_style: IconStyle
    sound: Sound
    priority: Priority
    delay: str
    custom_delay: int | None
    target_device_token: str | None
    metadata: Mapping[str, str]
    scheduled_at: datetime
    sender_name: str | None
    sender_icon: str | None
    status: NotificationStatus
    created_at: datetime
    devices_targeted: int
    failure_reason: str | None = None
    stream: StreamRef | None = None
    # When the scheduler must look at the notification itself (not a delivery):
    # a QUEUED one with no delivery at its due time, a SCHEDULED one at the end
    # of its wait for a device. None otherwise.
    wake_at: datetime | None = None
    settled_at: datetime | None = None
    revision: int = 1  # +1 on each PATCH: what `If-Match` names
    # One key names one thing that changes: a newer one of the account replaces it.
    collapse_key: str | None = None
    renotify: bool = True  # False: a replacement is quiet (no sound, read stays read)
    supersedes: str | None = None  # the notification this one replaced (by key or /replace)
    # Expiry (domain/expiry.py): ttl as given, expires_at resolved from it or given.
    ttl: int | None = None
    expires_at: datetime | None = None
    withdrawn_at: datetime | None = None  # POST .../withdraw, once
    schedule: ScheduleRef | None = None
    # A local-time send: each delivery due at this wall-clock time in its recipient's zone.
    deliver_at: LocalTime | None = attrs.field(default=None, converter=as_kept)


@attrs.frozen
class DeliveryCounts:
    """How a notification's deliveries stand (IN_FLIGHT counts as pending)."""

    pending: int = 0
    delivered: int = 0
    failed: int = 0
    cancelled: int = 0
    handed: int = 0  # deliveries that were ever handed to a gateway (attempts > 0)
    held: int = 0
    expired: int = 0
    opened: int = 0  # deliveries with an `opened` receipt (not people)


@attrs.frozen
class QueueDepth:
    """How the engine's queue stands across every account (for monitoring)."""

    pending: int = 0  # PENDING deliveries, due now or later
    due: int = 0  # of those, the ones whose due time has come (waiting for a claim)
    in_flight: int = 0  # leased to an engine, being sent
    oldest_due_at: datetime | None = None  # the earliest due time of a PENDING one


@attrs.frozen
class NotificationStats:
    """An account's notification counts (GET /api/notifications/stats)."""

    by_status: Mapping[str, int]
    deliveries: DeliveryCounts
    created_24h: int
    delivered_24h: int
    failed_24h: int

    @property
    def total(self) -> int:
        """Every notification of the account."""
        return sum(self.by_status.values())


@attrs.frozen
class Delivery:
    """One notification on its way to one device."""

    id: str
    notification_id: str
    account_id: str
    device_id: str
    status: DeliveryStatus
    due_at: datetime
    attempts: int = 0
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    failure_reason: str | None = None
    settled_at: datetime | None = None
    # Migration 0025: what the deliveries list shows (services/receipts.py).
    last_attempt_at: datetime | None = None
    delivered_at: datetime | None = None
    displayed_at: datetime | None = None
    opened_at: datetime | None = None
    # What its next send carries: the notification, or its withdrawal (domain/withdraw.py).
    kind: str = "notification"
    # Quiet hours: the end of the quiet it waits for (HELD), kept once released.
    held_until: datetime | None = None


@attrs.frozen
class Stream:
    """A publish/subscribe channel with a shareable code."""

    id: str
    account_id: str
    name: str
    code: str
    description: str
    icon_url: str | None
    created_at: datetime


@attrs.frozen
class StreamView:
    """A stream with its live subscriber count (what the API shows)."""

    stream: Stream
    subscribers: int


@attrs.frozen
class Subscription:
    """A user's subscription to a stream."""

    id: str
    account_id: str
    stream_id: str
    created_at: datetime
    # The subscriber's mute (API.md, "The recipient's time"; migration 0024).
    muted_until: datetime | None = None
    allow_critical: bool = True
