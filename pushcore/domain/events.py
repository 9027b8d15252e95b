"""Events for senders and the endpoints they are posted to (event webhooks): pure rules.

An event reports one change (a notification settled, a delivery failed, a device
deactivated...); it is written in the same transaction as that change (the
outbox, ``services/events.py``) with one pending attempt per subscribed endpoint,
and posted by the engine's sender (``delivery/webhooks.py``) with the Standard
Webhooks headers of ``domain/webhooks.py``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

import attrs

from pushcore.domain import validation as v


class EventType(enum.StrEnum):
    """What an event reports (API.md, "Following up")."""

    NOTIFICATION_DELIVERED = "notification.delivered"
    NOTIFICATION_FAILED = "notification.failed"
    NOTIFICATION_WITHDRAWN = "notification.withdrawn"
    DELIVERY_FAILED = "delivery.failed"
    DELIVERY_EXPIRED = "delivery.expired"
    DELIVERY_OPENED = "delivery.opened"
    DEVICE_DEACTIVATED = "device.deactivated"
    SCHEDULE_MISSED = "schedule.missed"
    SCHEDULE_COMPLETED = "schedule.completed"
    WEBHOOK_TEST = "webhook.test"


# The prefixes an endpoint may subscribe to (``delivery.*``), and ``*`` for all.
PREFIXES = tuple(sorted({t.value.split(".")[0] + ".*" for t in EventType}))
SUBSCRIPTIONS = ("*", *PREFIXES, *(t.value for t in EventType))

FREE_PLAN_WEBHOOKS = 3
PRO_PLAN_WEBHOOKS = 25
DESCRIPTION_MAX = 200
EVENTS_PAGE_MAX = 100
EVENTS_PAGE_DEFAULT = 50

# Retries after the first attempt (API.md): then every 12 h, for 3 days in all.
RETRY_DELAYS = (
    timedelta(seconds=5),
    timedelta(minutes=5),
    timedelta(minutes=30),
    timedelta(hours=2),
    timedelta(hours=5),
    timedelta(hours=10),
)
RETRY_EVERY = timedelta(hours=12)
GIVE_UP_AFTER = timedelta(days=3)
# What the old secret keeps signing for after a rotation.
ROTATION_OVERLAP = timedelta(hours=24)
# A 2xx within this is a success; anything else is retried.
ANSWER_WITHIN = timedelta(seconds=15)


def matches(subscriptions: Iterable[str], event_type: str) -> bool:
    """Whether an endpoint subscribed to ``subscriptions`` gets events of ``event_type``."""
    for wanted in subscriptions:
        if wanted in ("*", event_type):
            return True
        if wanted.endswith(".*") and event_type.startswith(wanted[:-1]):
            return True
    return False


def next_attempt_delay(attempts: int, retry_after: float | None = None) -> timedelta:
    """How long after attempt number ``attempts`` (1 = the first) the next one is due;
    a receiver's Retry-After, when longer, wins."""
    scheduled = RETRY_DELAYS[attempts - 1] if attempts <= len(RETRY_DELAYS) else RETRY_EVERY
    if retry_after is not None and retry_after > scheduled.total_seconds():
        return timedelta(seconds=retry_after)
    return scheduled


def gives_up(first_attempt_at: datetime, next_at: datetime) -> bool:
    """Whether an event first tried at ``first_attempt_at`` is past its 3 days at ``next_at``."""
    return next_at - first_attempt_at > GIVE_UP_AFTER


def _subscriptions(value: Sequence[str]) -> None:
    if not value:
        raise ValueError("must name at least one event type or prefix")
    if len(value) > len(SUBSCRIPTIONS):
        raise ValueError(f"must hold at most {len(SUBSCRIPTIONS)} items")
    unknown = [s for s in value if not isinstance(s, str) or s not in SUBSCRIPTIONS]
    if unknown:
        raise ValueError(f"unknown event type or prefix: {unknown[0]!r}")


subscriptions_rule = v.Rule(
    _subscriptions,
    {
        "items": {"type": "string", "enum": list(SUBSCRIPTIONS)},
        "minItems": 1,
        "maxItems": len(SUBSCRIPTIONS),
    },
)

_URL_ABOUT = v.about(
    "Where events are POSTed: an http(s) URL; a private, loopback or link-local host is "
    "refused (as for webhook devices).",
    example="https://example.com/pushcore-events",
)
_EVENTS_ABOUT = v.about(
    "The event types to send, or prefixes such as `delivery.*` (`*`: all).",
    example=["notification.*", "delivery.failed"],
)
_DESCRIPTION_ABOUT = v.about("What the endpoint is for.", example="Order service")


@attrs.frozen
class NewWebhook:
    """A request to create an event webhook endpoint (POST /api/webhooks)."""

    url: str = attrs.field(validator=v.http_url, metadata=_URL_ABOUT)
    events: tuple[str, ...] = attrs.field(validator=subscriptions_rule, metadata=_EVENTS_ABOUT)
    description: str | None = attrs.field(
        default=None, validator=v.text(0, DESCRIPTION_MAX), metadata=_DESCRIPTION_ABOUT
    )


@attrs.frozen
class WebhookChange:
    """A PATCH of an endpoint: the fields given change, the others stay."""

    url: str | None = attrs.field(default=None, validator=v.http_url, metadata=_URL_ABOUT)
    events: tuple[str, ...] | None = attrs.field(
        default=None, validator=subscriptions_rule, metadata=_EVENTS_ABOUT
    )
    description: str | None = attrs.field(
        default=None, validator=v.text(0, DESCRIPTION_MAX), metadata=_DESCRIPTION_ABOUT
    )
    enabled: bool | None = attrs.field(
        default=None,
        metadata=v.about("false pauses it; true enables it again (and clears disabledReason)."),
    )


@attrs.frozen
class WebhookEndpoint:
    """Where an account's events are posted, and the secrets they are signed with."""

    id: str
    account_id: str
    url: str
    events: tuple[str, ...]
    description: str | None
    enabled: bool
    secret: str
    created_at: datetime
    disabled_reason: str | None = None
    # After a rotation the previous secret signs too, until old_secret_until.
    old_secret: str | None = None
    old_secret_until: datetime | None = None

    def secrets_at(self, now: datetime) -> tuple[str, ...]:
        """The secrets that sign a request sent at ``now`` (two during a rotation)."""
        until = self.old_secret_until
        if self.old_secret is not None and until is not None and now < until:
            return (self.secret, self.old_secret)
        return (self.secret,)

    def changed(self, change: WebhookChange) -> WebhookEndpoint:
        """The endpoint with ``change`` applied; enabling clears the reason it was disabled."""
        fields: dict[str, Any] = {
            k: getattr(change, k)
            for k in ("url", "events", "description", "enabled")
            if getattr(change, k) is not None
        }
        if change.enabled:
            fields["disabled_reason"] = None
        return attrs.evolve(self, **fields)

    def rotated(self, secret: str, now: datetime) -> WebhookEndpoint:
        """The endpoint signing with ``secret``, its current one kept for the overlap."""
        return attrs.evolve(
            self, secret=secret, old_secret=self.secret, old_secret_until=now + ROTATION_OVERLAP
        )


@attrs.frozen
class Event:
    """One change told to the account's endpoints and kept in its event log."""

    id: str
    account_id: str
    type: str
    created_at: datetime
    data: Mapping[str, Any]
    notification_id: str | None = None


class AttemptStatus(enum.StrEnum):
    """Where one event's posting to one endpoint stands."""

    PENDING = "pending"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@attrs.frozen
class Attempt:
    """One event posted (or to be posted) to one endpoint: its latest try."""

    endpoint_id: str
    event_id: str
    type: str
    status: AttemptStatus
    attempts: int
    created_at: datetime
    next_attempt_at: datetime | None = None
    attempted_at: datetime | None = None
    response_status: int | None = None
    duration_ms: int | None = None


@attrs.frozen
class AttemptResult:
    """What one POST of an event got: a 2xx (``ok``), another status, or none (a timeout)."""

    ok: bool
    status: int | None
    duration_ms: int
    retry_after: float | None = None
    reason: str = ""

    @property
    def gone(self) -> bool:
        """A 410: the receiver says the endpoint is gone for good."""
        return self.status == 410
