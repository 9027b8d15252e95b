"""The platform-neutral delivery payload of API.md, built from a notification."""

from __future__ import annotations

from typing import Any

from pushcore.domain.model import Notification
from pushcore.domain.timefmt import format_timestamp


def sender_of(notification: Notification) -> dict[str, str | None] | None:
    """``{"name", "icon"}`` when a custom sender is set (a missing half is None), else None."""
    if notification.sender_name is None and notification.sender_icon is None:
        return None
    return {"name": notification.sender_name, "icon": notification.sender_icon}


def neutral_payload(notification: Notification) -> dict[str, Any]:
    """The JSON body POSTed to webhooks and encrypted for Web Push."""
    stream = notification.stream
    return {
        "notificationId": notification.id,
        "title": notification.title,
        "body": notification.body,
        "iconStyle": notification.icon_style.value,
        "sound": notification.sound.value,
        "priority": notification.priority.value,
        "metadata": dict(notification.metadata),
        "sender": sender_of(notification),
        "stream": None if stream is None else {"name": stream.name, "code": stream.code},
        "scheduledAt": format_timestamp(notification.scheduled_at),
    }
