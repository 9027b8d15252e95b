"""The platform-neutral delivery payload of API.md, built from a notification."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
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


ELLIPSIS = "…"


def shorten_to_fit(
    texts: MutableMapping[str, Any],
    fields: Sequence[str],
    size: Callable[[], int],
    limit: int,
) -> bool:
    """Cut ``texts[field]`` (each of ``fields`` in turn, ending in an ellipsis) until
    ``size()`` is at most ``limit``; False when even empty ones leave it too large.

    ``size`` measures the whole payload that holds ``texts``, as the platform
    counts it: escapes and multi-byte characters make a character's cost
    vary, so the longest prefix that fits is found by measuring (a binary
    search), not computed.
    """
    if size() <= limit:
        return True
    for field in fields:
        text = texts[field]
        best: str | None = None
        low, high = 0, len(text) - 1
        while low <= high:
            keep = (low + high) // 2
            texts[field] = text[:keep].rstrip() + ELLIPSIS
            if size() <= limit:
                best, low = texts[field], keep + 1
            else:
                high = keep - 1
        if best is not None:
            texts[field] = best
            return True
        texts[field] = ""
        if size() <= limit:
            return True
    return False
