"""Notifications as API JSON, and the list cursor."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from pushcore.converter._base import maybe_timestamp
from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.model import DeliveryCounts, Notification, NotificationStats
from pushcore.domain.states import NotificationStatus
from pushcore.domain.timefmt import format_timestamp

_ID = re.compile(r"ntf_[0-9A-HJKMNP-TV-Z]{26}")


def notification_created_json(n: Notification) -> dict[str, Any]:
    """The creation response of the spec."""
    return {
        "id": n.id,
        "title": n.title,
        "body": n.body,
        "status": n.status.value,
        "scheduledAt": format_timestamp(n.scheduled_at),
        "createdAt": format_timestamp(n.created_at),
        "devicesTargeted": n.devices_targeted,
    }


def notification_json(n: Notification, counts: DeliveryCounts | None = None) -> dict[str, Any]:
    """The full record: every stored request field, status and failure reason."""
    body: dict[str, Any] = {
        **notification_created_json(n),
        "iconStyle": n.icon_style.value,
        "sound": n.sound.value,
        "priority": n.priority.value,
        "delay": n.delay,
        "customDelay": n.custom_delay,
        "targetDeviceToken": n.target_device_token,
        "metadata": dict(n.metadata),
        "senderName": n.sender_name,
        "senderIcon": n.sender_icon,
        "stream": None
        if n.stream is None
        else {"id": n.stream.id, "name": n.stream.name, "code": n.stream.code},
        "failureReason": n.failure_reason,
        "settledAt": maybe_timestamp(n.settled_at),
    }
    if counts is not None:
        body["deliveries"] = {
            "pending": counts.pending,
            "delivered": counts.delivered,
            "failed": counts.failed,
        }
    return body


def stats_json(stats: NotificationStats) -> dict[str, Any]:
    """GET /api/notifications/stats."""
    return {
        "total": stats.total,
        "byStatus": {s.value: stats.by_status.get(s.value, 0) for s in NotificationStatus},
        "deliveries": {
            "delivered": stats.deliveries.delivered,
            "failed": stats.deliveries.failed,
            "pending": stats.deliveries.pending,
        },
        "last24h": {
            "created": stats.created_24h,
            "delivered": stats.delivered_24h,
            "failed": stats.failed_24h,
        },
    }


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
        if not limit.isdigit() or not 1 <= int(limit) <= 100:
            errors.append(FieldError("limit", "must be an integer from 1 to 100"))
        else:
            parsed_limit = int(limit)
    if errors:
        raise ValidationError(errors)
    return parsed_status, parsed_limit
