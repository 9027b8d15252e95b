"""Streams and subscriptions as API JSON."""

from __future__ import annotations

from typing import Any

from pushcore.domain.model import StreamView, Subscription
from pushcore.domain.timefmt import format_timestamp
from pushcore.services.streams import Lookup, SendResult


def stream_summary_json(view: StreamView) -> dict[str, Any]:
    """The stream nested in subscriptions: no creation time."""
    s = view.stream
    return {
        "id": s.id,
        "name": s.name,
        "code": s.code,
        "description": s.description,
        "iconUrl": s.icon_url,
        "subscribers": view.subscribers,
    }


def stream_json(view: StreamView) -> dict[str, Any]:
    """A stream as its creator sees it."""
    return {**stream_summary_json(view), "createdAt": format_timestamp(view.stream.created_at)}


def lookup_json(found: Lookup) -> dict[str, Any]:
    """GET /api/streams/lookup/:code."""
    return {**stream_summary_json(found.stream), "isSubscribed": found.is_subscribed}


def subscription_json(subscription: Subscription, view: StreamView) -> dict[str, Any]:
    """A subscription with its stream."""
    return {
        "id": subscription.id,
        "stream": stream_summary_json(view),
        "createdAt": format_timestamp(subscription.created_at),
    }


def send_result_json(result: SendResult) -> dict[str, Any]:
    """POST /api/streams/:id/send."""
    return {
        "notificationId": result.notification.id,
        "sent": result.sent,
        "subscribers": result.subscribers,
        "stream": {"name": result.stream.name, "code": result.stream.code},
    }
