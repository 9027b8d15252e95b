"""Notifications as API JSON, and the list cursor."""

from __future__ import annotations

import enum
import re
from datetime import datetime
from typing import Any, ClassVar

import attrs

from pushcore.converter._base import camel
from pushcore.converter._views import (
    CREATED,
    JSON_NAME,
    OMIT_IF_NONE,
    View,
    copy_fields,
    count,
    ident,
    json_of,
    to_json,
)
from pushcore.converter.paging import Cursor, PageView
from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.inputs import EXAMPLE_FUTURE_TIME, NewNotification
from pushcore.domain.model import (
    DeliveryCounts,
    IconStyle,
    Notification,
    NotificationStats,
    Priority,
    Sound,
)
from pushcore.domain.states import NotificationStatus
from pushcore.domain.timefmt import format_timestamp
from pushcore.domain.validation import about

_ID = re.compile(r"ntf_[0-9A-HJKMNP-TV-Z]{26}")
# What the list's cursor is (base64url of a notification id, unpadded); anything
# else given as one is a 400.
CURSOR_PATTERN = "^[A-Za-z0-9_-]{40}$"
CURSOR_EXAMPLE = "bnRmXzAxSkQzVjZRNVg4WksyTTRON1A5UjBTMVQy"
NOTIFICATION_CURSOR = Cursor(_ID, CURSOR_PATTERN, CURSOR_EXAMPLE)


@attrs.frozen
class NotificationCreatedView(View):
    """What creating a notification answers."""

    id: str = attrs.field(metadata=ident("ntf", "notification"))
    title: str
    body: str
    status: NotificationStatus = attrs.field(
        metadata=about(
            "SCHEDULED (waiting for a device), QUEUED, DELIVERED (all settled, one or more "
            "succeeded), FAILED (all failed), CANCELLED."
        )
    )
    scheduled_at: datetime = attrs.field(metadata=about("The effective due time."))
    created_at: datetime = attrs.field(metadata=CREATED)
    devices_targeted: int = attrs.field(
        metadata=count("Active target devices at creation (targets are resolved when due).")
    )

    @classmethod
    def of(cls, n: Notification) -> NotificationCreatedView:
        """The view of a notification just created."""
        return copy_fields(cls, n)


@attrs.frozen
class DeliveryCountsView(View):
    """How many of a notification's (or an account's) deliveries stand where."""

    pending: int = attrs.field(metadata=count("Not settled yet (waiting or being sent)."))
    delivered: int = attrs.field(metadata=count("Accepted by the gateway."))
    failed: int = attrs.field(metadata=count("Failed for good."))

    @classmethod
    def of(cls, counts: DeliveryCounts) -> DeliveryCountsView:
        """The three counts the API shows (in flight counts as pending)."""
        return copy_fields(cls, counts)


@attrs.frozen
class NotificationDeliveriesView(DeliveryCountsView):
    """One notification's delivery counts, with those the account's stats leave out."""

    held: int = attrs.field(metadata=count("Held by the recipient's quiet hours."))
    expired: int = attrs.field(metadata=count("Not sent before the notification expired."))
    opened: int = attrs.field(
        metadata=count("Deliveries opened (a receipt, or the inbox entry read): not people.")
    )

    @classmethod
    def of(cls, counts: DeliveryCounts) -> NotificationDeliveriesView:
        """The counts of one notification's deliveries."""
        return copy_fields(cls, counts)


@attrs.frozen
class StreamRefView(View):
    """The stream a notification was sent to (a stream send)."""

    id: str = attrs.field(metadata=ident("str", "stream"))
    name: str
    code: str


@attrs.frozen
class ScheduleRefView(View):
    """The recurring schedule a notification was made for, and the occurrence."""

    id: str = attrs.field(metadata=ident("sch", "schedule"))
    occurrence_at: datetime = attrs.field(
        metadata=about("The occurrence's time (a trigger's: when it was triggered).")
    )


@attrs.frozen
class LocalTimeView(View):
    """A local-time send's time: each recipient's deliveries fall due at it in their zone."""

    local_time: str = attrs.field(metadata=about("The wall-clock time, HH:MM.", example="09:00"))
    date: str | None = attrs.field(metadata=about("The day (YYYY-MM-DD), or null: the next."))


@attrs.frozen
class NotificationView(NotificationCreatedView):
    """The full record: every stored request field, status, failure reason and counts.

    ``deliveries`` is there for a single notification (GET, cancel) and left
    out of list pages, which do not count each item's deliveries.
    """

    icon_style: IconStyle
    sound: Sound
    priority: Priority
    delay: str = attrs.field(metadata=about("The delay preset that applied."))
    custom_delay: int | None
    target_device_token: str | None
    metadata: dict[str, str]
    sender_name: str | None
    sender_icon: str | None
    stream: StreamRefView | None
    revision: int = attrs.field(metadata=about("1 at creation, +1 on each PATCH (`If-Match`)."))
    collapse_key: str | None = attrs.field(
        metadata=about("A newer notification with this key replaces this one; null: none.")
    )
    renotify: bool = attrs.field(metadata=about("False: a replacement is quiet."))
    supersedes: str | None = attrs.field(
        metadata=about("The notification this one replaced (POST .../replace); else null.")
    )
    failure_reason: str | None = attrs.field(
        metadata=about("Why it failed: `no_devices`, a gateway's reason.")
    )
    settled_at: datetime | None = attrs.field(
        metadata=about("When it became DELIVERED, FAILED or CANCELLED.")
    )
    ttl: int | None = attrs.field(metadata=about("Seconds from the due time it expires, as given."))
    expires_at: datetime | None = attrs.field(
        metadata=about(
            "After this it is not delivered any more; null: never expires.",
            example=EXAMPLE_FUTURE_TIME,
        )
    )
    withdrawn_at: datetime | None = attrs.field(
        metadata=about("When POST .../withdraw took it back; null until then.")
    )
    deliveries: NotificationDeliveriesView | None = attrs.field(
        default=None,
        metadata={
            OMIT_IF_NONE: True,
            **about(
                "The deliveries (one per target device) by state: for one notification "
                "(GET, cancel), not in list pages."
            ),
        },
    )
    schedule: ScheduleRefView | None = attrs.field(
        default=None,
        metadata=about("The recurring schedule and occurrence it was made for; null if none."),
    )
    deliver_at: LocalTimeView | None = attrs.field(
        default=None,
        metadata=about(
            "A local-time send's `deliverAt` (each delivery's own due time is in the "
            "deliveries list, `dueAt`); null if none."
        ),
    )

    @classmethod
    def of(cls, n: Notification, counts: DeliveryCounts | None = None) -> NotificationView:
        """The view of a stored notification, with its delivery counts when given."""
        return copy_fields(
            cls,
            n,
            metadata=dict(n.metadata),
            stream=None if n.stream is None else copy_fields(StreamRefView, n.stream),
            deliveries=None if counts is None else NotificationDeliveriesView.of(counts),
            schedule=None if n.schedule is None else copy_fields(ScheduleRefView, n.schedule),
            deliver_at=None if n.deliver_at is None else copy_fields(LocalTimeView, n.deliver_at),
        )


@attrs.frozen
class NotificationPageView(PageView):
    """One page of the notification list, newest first."""

    item = NotificationView.of
    cursor = NOTIFICATION_CURSOR

    items: tuple[NotificationView, ...]
    next_cursor: str | None = NOTIFICATION_CURSOR.field()


@attrs.frozen
class Last24hView(View):
    """What happened in the last 24 hours."""

    created: int = attrs.field(metadata=count("Created in the last 24 hours."))
    delivered: int = attrs.field(metadata=count("Became DELIVERED in the last 24 hours."))
    failed: int = attrs.field(metadata=count("Became FAILED in the last 24 hours."))


@attrs.frozen
class StatsView(View):
    """An account's notifications by status, its deliveries, the last 24 hours."""

    schema_name: ClassVar[str] = "NotificationStats"

    total: int = attrs.field(metadata=count("Every notification of the account."))
    # Every status, zeros included: a closed object rather than any string key.
    by_status: dict[str, int] = attrs.field(
        metadata=about(
            properties={s.value: {"type": "integer", "minimum": 0} for s in NotificationStatus},
            required=[s.value for s in NotificationStatus],
            additionalProperties=False,
        )
    )
    deliveries: DeliveryCountsView
    last_24h: Last24hView = attrs.field(metadata={JSON_NAME: "last24h"})

    @classmethod
    def of(cls, stats: NotificationStats) -> StatsView:
        """The view of an account's counts."""
        return cls(
            total=stats.total,
            by_status={s.value: stats.by_status.get(s.value, 0) for s in NotificationStatus},
            deliveries=DeliveryCountsView.of(stats.deliveries),
            last_24h=Last24hView(
                created=stats.created_24h,
                delivered=stats.delivered_24h,
                failed=stats.failed_24h,
            ),
        )


def notification_created_json(n: Notification) -> dict[str, Any]:
    """What a create answers: the JSON of :class:`NotificationCreatedView`, written
    straight from the notification (:func:`~pushcore.converter.json_of`)."""
    return json_of(NotificationCreatedView, n)


def notification_json(n: Notification, counts: DeliveryCounts | None = None) -> dict[str, Any]:
    """The JSON of :class:`NotificationView` (kept for the CLI's ``--json``)."""
    return to_json(NotificationView.of(n, counts))


def stats_json(stats: NotificationStats) -> dict[str, Any]:
    """The JSON of :class:`StatsView` (kept for the CLI's ``--json``)."""
    return to_json(StatsView.of(stats))


def parse_list_query(
    status: str | None, limit: str | None
) -> tuple[NotificationStatus | None, int]:
    """The status filter and page size from query parameters, or one 400 naming both."""
    errors: list[FieldError] = []
    parsed_status: NotificationStatus | None = None
    if status is not None:
        try:
            parsed_status = NotificationStatus(status.upper())
        except ValueError:
            allowed = ", ".join(s.value for s in NotificationStatus)
            errors.append(FieldError("status", f"must be one of: {allowed}"))
    parsed_limit = 20
    if limit is not None:
        # ASCII digits, and not too many: int() refuses other Unicode digits ("²")
        # and, past 4,300 digits, any; either would be a 500.
        digits = limit.isascii() and limit.isdigit() and len(limit) <= 20
        if not digits or not 1 <= int(limit) <= 100:
            errors.append(FieldError("limit", "must be an integer from 1 to 100"))
        else:
            parsed_limit = int(limit)
    if errors:
        raise ValidationError(errors)
    return parsed_status, parsed_limit


# The timing is left out: a PATCH that gives none keeps the stored due time.
_REQUEST_FIELDS = tuple(
    name
    for name in attrs.fields_dict(NewNotification)
    if name in attrs.fields_dict(Notification)
    and name not in {"delay", "custom_delay", "scheduled_at", "deliver_at"}
)


# Each field's JSON name, worked out once (a PATCH reads its merge base each time).
_REQUEST_NAMES = tuple((name, camel(name)) for name in _REQUEST_FIELDS)


def request_json(n: Notification) -> dict[str, Any]:
    """The create request (API JSON, no timing) that a stored notification says."""
    found: dict[str, Any] = {}
    for name, json_name in _REQUEST_NAMES:
        value = getattr(n, name)
        if value is not None:
            found[json_name] = _request_value(value)
    if n.ttl is not None:
        # The stored expiresAt follows from the ttl: the request gave only the ttl.
        found.pop("expiresAt", None)
    found["metadata"] = dict(n.metadata)
    return found


def _request_value(value: Any) -> Any:
    """A stored value as a request gives it (enums by value, instants as timestamps)."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, datetime):
        return format_timestamp(value)
    return value
