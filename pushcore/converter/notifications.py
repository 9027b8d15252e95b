"""Notifications as API JSON, and the list cursor."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import attrs

from pushcore.converter._views import JSON_NAME, OMIT_IF_NONE, View, copy_fields, to_json
from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.model import (
    DeliveryCounts,
    IconStyle,
    Notification,
    NotificationStats,
    Priority,
    Sound,
)
from pushcore.domain.states import NotificationStatus

_ID = re.compile(r"ntf_[0-9A-HJKMNP-TV-Z]{26}")


@attrs.frozen
class NotificationCreatedView(View):
    """The creation response of the spec."""

    id: str
    title: str
    body: str
    status: NotificationStatus
    scheduled_at: datetime
    created_at: datetime
    devices_targeted: int

    @classmethod
    def of(cls, n: Notification) -> NotificationCreatedView:
        """The view of a notification just created."""
        return copy_fields(cls, n)


@attrs.frozen
class DeliveryCountsView(View):
    """How many of a notification's (or an account's) deliveries stand where."""

    pending: int
    delivered: int
    failed: int

    @classmethod
    def of(cls, counts: DeliveryCounts) -> DeliveryCountsView:
        """The three counts the API shows (in flight counts as pending)."""
        return copy_fields(cls, counts)


@attrs.frozen
class StreamRefView(View):
    """The stream a notification was sent to: ``{id, name, code}``."""

    id: str
    name: str
    code: str


@attrs.frozen
class NotificationView(NotificationCreatedView):
    """The full record: every stored request field, status, failure reason and counts.

    ``deliveries`` is there for a single notification (GET, cancel) and left
    out of list pages, which do not count each item's deliveries.
    """

    icon_style: IconStyle
    sound: Sound
    priority: Priority
    delay: str
    custom_delay: int | None
    target_device_token: str | None
    metadata: dict[str, str]
    sender_name: str | None
    sender_icon: str | None
    stream: StreamRefView | None
    failure_reason: str | None
    settled_at: datetime | None
    deliveries: DeliveryCountsView | None = attrs.field(default=None, metadata={OMIT_IF_NONE: True})

    @classmethod
    def of(cls, n: Notification, counts: DeliveryCounts | None = None) -> NotificationView:
        """The view of a stored notification, with its delivery counts when given."""
        return copy_fields(
            cls,
            n,
            metadata=dict(n.metadata),
            stream=None if n.stream is None else copy_fields(StreamRefView, n.stream),
            deliveries=None if counts is None else DeliveryCountsView.of(counts),
        )


@attrs.frozen
class NotificationPageView(View):
    """One page of the notification list, newest first; ``next_cursor`` None on the last."""

    items: tuple[NotificationView, ...]
    next_cursor: str | None

    @classmethod
    def of(cls, items: Sequence[Notification], next_before: str | None) -> NotificationPageView:
        """A page whose cursor continues after ``next_before`` (None: no more pages)."""
        return cls(
            items=tuple(NotificationView.of(n) for n in items),
            next_cursor=encode_cursor(next_before) if next_before else None,
        )


@attrs.frozen
class Last24hView(View):
    """What happened in the last 24 hours."""

    created: int
    delivered: int
    failed: int


@attrs.frozen
class StatsView(View):
    """GET /api/notifications/stats: ``by_status`` has every status, zeros included."""

    total: int
    by_status: dict[str, int]
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
    """The JSON of :class:`NotificationCreatedView` (kept for the CLI's ``--json``)."""
    return to_json(NotificationCreatedView.of(n))


def notification_json(n: Notification, counts: DeliveryCounts | None = None) -> dict[str, Any]:
    """The JSON of :class:`NotificationView` (kept for the CLI's ``--json``)."""
    return to_json(NotificationView.of(n, counts))


def stats_json(stats: NotificationStats) -> dict[str, Any]:
    """The JSON of :class:`StatsView` (kept for the CLI's ``--json``)."""
    return to_json(StatsView.of(stats))


def encode_cursor(last_id: str) -> str:
    """An opaque cursor that continues after ``last_id``."""
    return base64.urlsafe_b64encode(last_id.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> str:
    """The id a cursor continues after; ValidationError when it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("ascii")
    except (binascii.Error, ValueError):
        raw = ""
    if not _ID.fullmatch(raw):
        raise ValidationError([FieldError("cursor", "is not a valid cursor")])
    return raw


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
